package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The processes and the HTTP client of TestClusterSoak.

// soakProc is one ganglion serve process of the soak, started again
// under the same name and data directory after each fault that ends it.
// Its fields after mu change under mu.
type soakProc struct {
	name string
	data string // its --data: where its token is kept

	mu      sync.Mutex
	gen     int // how many times it was started
	cmd     *exec.Cmd
	addr    string // host:port of the current process
	token   string
	up      bool          // started, and not ended by the soak since
	frozen  bool          // SIGSTOPped by a fault
	exited  chan struct{} // closed when the current process has ended
	logPath string        // stdout and stderr of the current process
}

// soakStartTimeout bounds a process's start, until it says where it
// listens.
const soakStartTimeout = 60 * time.Second

var soakServing = regexp.MustCompile(`^serving the agents of .* on http://(127\.0\.0\.1:\d+)/v1/$`)

// start starts p: ganglion serve on the soak's project, its output to a
// new log file. It returns once p listens.
func (s *soak) start(p *soakProc) error {
	p.mu.Lock()
	p.gen++
	gen := p.gen
	p.mu.Unlock()
	logPath := filepath.Join(s.logs, fmt.Sprintf("%s.%d.log", p.name, gen))
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, "serve", s.dir, "--addr", "127.0.0.1:0", "--data", p.data,
		"--shutdown-timeout", s.shutdown.String(), "--log-level", "info")
	cmd.Env = s.env
	cmd.Stderr = log
	out, err := cmd.StdoutPipe()
	if err != nil {
		log.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	addrc := make(chan string, 1)
	go func() { // copies stdout to the log, and says where p listens
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			if m := soakServing.FindStringSubmatch(sc.Text()); m != nil {
				addrc <- m[1]
			}
		}
		io.Copy(io.Discard, out)
	}()
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(log, "soak: %s.%d ended: %v\n", p.name, gen, err)
		log.Close()
		close(exited)
	}()
	var addr string
	select {
	case addr = <-addrc:
	case <-exited:
		return fmt.Errorf("%s.%d ended before it served: see %s", p.name, gen, logPath)
	case <-time.After(soakStartTimeout):
		s.quit(cmd, exited)
		return fmt.Errorf("%s.%d did not serve within %v: goroutines dumped to %s", p.name, gen, soakStartTimeout, logPath)
	}
	token, err := os.ReadFile(p.data + ".token")
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.cmd, p.addr, p.token, p.up, p.frozen, p.exited, p.logPath = cmd, addr, strings.TrimSpace(string(token)), true, false, exited, logPath
	p.mu.Unlock()
	return nil
}

// signal sends sig to p's current process.
func (p *soakProc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		p.cmd.Process.Signal(sig)
	}
}

// end marks p down, sends sig, and waits up to within for p to end. It
// returns how long p took, and false if it had not ended by then: it
// then dumps p's goroutines to its log (SIGQUIT) and kills it.
func (s *soak) end(p *soakProc, sig syscall.Signal, within time.Duration) (time.Duration, bool) {
	p.mu.Lock()
	p.up = false
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	began := time.Now()
	cmd.Process.Signal(sig)
	if sig != syscall.SIGKILL {
		cmd.Process.Signal(syscall.SIGCONT) // a frozen process must see it
	}
	select {
	case <-exited:
		return time.Since(began), true
	case <-time.After(within):
	}
	s.quit(cmd, exited)
	return time.Since(began), false
}

// quit dumps the goroutines of a process that is stuck to its log
// (SIGQUIT makes a Go program print them and exit), and kills it if it
// has not ended 10 s later.
func (s *soak) quit(cmd *exec.Cmd, exited chan struct{}) {
	cmd.Process.Signal(syscall.SIGCONT)
	cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}

// exitCode is how p's last process ended: its exit code, or -1 for a
// signal.
func (p *soakProc) exitCode() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// soakResponse is the outcome of one HTTP call.
type soakResponse struct {
	status int // 0: no response
	body   []byte
	err    error
	took   time.Duration
}

// refused says the connection was refused: the call was never received.
func (r soakResponse) refused() bool { return errors.Is(r.err, syscall.ECONNREFUSED) }

// String says what the call got, as the report shows it.
func (r soakResponse) String() string {
	if r.err != nil {
		msg := r.err.Error()
		switch {
		case r.refused():
			msg = "connection refused"
		case errors.Is(r.err, context.DeadlineExceeded):
			msg = "no answer in time"
		case errors.Is(r.err, io.EOF), errors.Is(r.err, syscall.ECONNRESET):
			msg = "connection closed"
		}
		return msg
	}
	return fmt.Sprintf("%d %s", r.status, oneLine(string(r.body), 160))
}

// class is the response's kind for the tallies: the status, or what
// kept it from coming.
func (r soakResponse) class() string {
	if r.err == nil {
		return fmt.Sprint(r.status)
	}
	switch s := r.String(); s {
	case "connection refused", "no answer in time", "connection closed":
		return s
	}
	return "error"
}

// call makes an API call on p, bounded by timeout. body is JSON, or "".
func (s *soak) call(p *soakProc, method, path, body string, timeout time.Duration) soakResponse {
	p.mu.Lock()
	addr, token := p.addr, p.token
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, rd)
	if err != nil {
		return soakResponse{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	began := time.Now()
	res, err := s.http.Do(req)
	if err != nil {
		return soakResponse{err: err, took: time.Since(began)}
	}
	defer res.Body.Close()
	var b bytes.Buffer
	_, err = io.Copy(&b, res.Body)
	return soakResponse{status: res.StatusCode, body: b.Bytes(), err: err, took: time.Since(began)}
}

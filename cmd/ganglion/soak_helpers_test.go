package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// The helpers of TestClusterSoak: its processes and HTTP client, its
// checks and its report.

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
	// The cluster names a process by its host and process ID.
	fmt.Fprintf(log, "soak: %s.%d is process %d\n", p.name, gen, cmd.Process.Pid)
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
	status     int // 0: no response
	body       []byte
	retryAfter string // the Retry-After header
	err        error
	took       time.Duration
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
	return fmt.Sprintf("%d %s", r.status, oneLine(string(r.body), 400))
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
	return soakResponse{status: res.StatusCode, body: b.Bytes(), retryAfter: res.Header.Get("Retry-After"), err: err, took: time.Since(began)}
}

// soakHistory is what a history's call answers.
type soakHistory struct{ Messages []pipeline.Message }

// soakAgents are the agents of soakConfig.
var soakAgents = []string{"worker", "asker", "lead", "helper"}

// check reads what the cluster kept, through the API, and checks it.
func (s *soak) check() {
	rng := rand.New(rand.NewPCG(s.seed, 3))
	req := s.newReq("check", "-", "-")
	get := func(path string, v any) bool {
		deadline := time.Now().Add(soakLookBound)
		for time.Now().Before(deadline) {
			r := s.attempt(req, "look", s.pick(rng, nil), "GET", path, "", soakReadTimeout)
			if r.status == http.StatusOK {
				if err := json.Unmarshal(r.body, v); err != nil {
					s.find("read", "GET %s: %v", path, err)
					return false
				}
				return true
			}
			time.Sleep(500 * time.Millisecond)
		}
		s.find("read", "GET %s: no process answered 200 for %v", path, soakLookBound)
		return false
	}
	histories := map[string][]pipeline.Message{} // agent/key → history
	calls := map[string]soakCall{}               // idempotency key → call
	for _, agent := range soakAgents {
		var out struct{ Instances []string }
		if !get("/v1/agents/"+agent+"/instances", &out) {
			continue
		}
		for _, key := range out.Instances {
			var h soakHistory
			path := "/v1/agents/" + agent + "/instances/" + key + "/history"
			if !get(path, &h) {
				continue
			}
			// A call cut by a fault gets its result when its instance
			// loads next, and an instance that runs no task loads only
			// for a turn sent to it: one is sent to such an instance,
			// which has it write the result.
			if agent != "helper" && len(h.Messages) > 0 && len(h.Messages[len(h.Messages)-1].ToolCalls) > 0 {
				settle := s.newReq("settle", agent, key)
				if _, ok := s.send(rng, settle); ok {
					s.settled++
				} else {
					s.find("settle", "%s/%s ends with a call without its result, and the turn sent to it to write the result failed: %s", agent, key, settle)
				}
				if !get(path, &h) {
					continue
				}
			}
			where := agent + "/" + key
			histories[where] = h.Messages
			s.wellFormed(where, h.Messages)
			for _, m := range h.Messages {
				for _, c := range m.ToolCalls {
					calls[pipeline.IdempotencyKey(agent, key, m.ID, c.ID)] = soakCall{where, m.ID, c}
				}
			}
		}
	}
	s.checkRequests(histories)
	s.checkFanOuts(histories)
	s.checkMarks(histories, calls)

	var items struct{ Items []soakItem }
	if get("/v1/pending?all=true", &items) {
		for _, it := range items.Items {
			switch {
			case it.Open:
				s.find("open-item", "item %s (%s) of %s/%s, turn %s, is %s, open after the quiet period", it.ID, it.Kind, it.Agent, it.Instance, it.TurnID, it.Status)
			case it.Status == "answered" && it.ResumedBy == "":
				s.find("unresumed", "item %s of %s/%s, turn %s, was answered and no turn resumed it", it.ID, it.Agent, it.Instance, it.TurnID)
			case it.Status == "answered" && it.Agent == "asker":
				// The resume turn finishes: its answer follows its input,
				// the message that names the turn.
				msgs := histories["asker/"+it.Instance]
				i := slices.IndexFunc(msgs, func(m pipeline.Message) bool { return m.Metadata["turn_id"] == it.ResumedBy })
				if i < 0 {
					s.findAt("resume-unfinished", it.UpdatedAt, "item %s of asker/%s was answered, and no message of its history names its resume %s", it.ID, it.Instance, it.ResumedBy)
					continue
				}
				finished, last := false, msgs[i].CreatedAt
				turn := []string{describeMessage(msgs[i])}
				for _, m := range msgs[i+1:] {
					if m.Role == pipeline.RoleUser {
						break
					}
					turn = append(turn, describeMessage(m))
					finished, last = finished || m.Role == pipeline.RoleAssistant && m.Content == "asker got it", m.CreatedAt
				}
				if !finished {
					s.findAt("resume-unfinished", last, "item %s of asker/%s was answered, and its resume %s did not finish: %s", it.ID, it.Instance, it.ResumedBy, strings.Join(turn, " | "))
				}
			}
		}
	}
	var tasks struct{ Tasks []json.RawMessage }
	if get("/v1/tasks", &tasks) {
		for _, task := range tasks.Tasks {
			s.find("open-task", "open after the quiet period: %s", oneLine(string(task), 300))
		}
	}
}

// soakCall is a tool call of a history.
type soakCall struct {
	where, msgID string
	call         pipeline.ToolCall
}

// wellFormed checks a history: message numbers increase; a tool result
// answers a call of the assistant message before it that has none yet;
// user and assistant messages come only once every call before them has
// its result; after the quiet period no call waits for its result.
func (s *soak) wellFormed(where string, msgs []pipeline.Message) {
	last := -1
	var open []string // calls of the last assistant message without a result
	var asking string // the assistant message whose calls are open
	for _, m := range msgs {
		n, err := strconv.Atoi(strings.TrimPrefix(m.ID, "msg-"))
		if err != nil || n <= last {
			s.findAt("history", m.CreatedAt, "%s: message %s comes after msg-%d", where, m.ID, last)
		}
		last = max(last, n)
		switch m.Role {
		case pipeline.RoleUser, pipeline.RoleAssistant:
			if len(open) > 0 {
				s.findAt("history", m.CreatedAt, "%s: %s (%s) comes while calls %v of %s have no result", where, m.ID, m.Role, open, asking)
				open = nil
			}
			if m.Role == pipeline.RoleAssistant {
				asking = m.ID
				for _, c := range m.ToolCalls {
					open = append(open, c.ID)
				}
			}
		case pipeline.RoleTool:
			i := slices.Index(open, m.ToolCallID)
			if i < 0 {
				s.findAt("history", m.CreatedAt, "%s: %s is a result for call %s, which has one already or was not just made", where, m.ID, m.ToolCallID)
				continue
			}
			open = slices.Delete(open, i, i+1)
		}
	}
	if len(open) > 0 {
		s.find("history", "%s: calls %v of %s have no result after the quiet period", where, open, asking)
	}
}

// findAt records a finding about something stored at t.
func (s *soak) findAt(check string, t time.Time, format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.findings = append(s.findings, soakFinding{check, t.Sub(s.began), fmt.Sprintf(format, args...)})
}

// checkRequests checks that each request is stored at most once, and
// that each one answered 200 is stored once, with its answer once.
func (s *soak) checkRequests(histories map[string][]pipeline.Message) {
	for _, req := range s.reqs {
		if req.kind != "turn" && req.kind != "ask" && req.kind != "fan" && req.kind != "probe" {
			continue
		}
		msgs := histories[req.agent+"/"+req.key]
		var at []int
		for i, m := range msgs {
			if m.Role == pipeline.RoleUser && m.Content == req.text {
				at = append(at, i)
			}
		}
		req.mu.Lock()
		outcome := req.outcome
		req.mu.Unlock()
		switch {
		case len(at) > 1:
			s.findAt("twice", msgs[at[1]].CreatedAt, "%s is stored %d times: %s", req.id, len(at), req)
			continue
		case len(at) == 0 && (outcome == "answered" || outcome == "accepted"):
			s.find("lost", "%s was %s, and no history has it: %s", req.id, outcome, req)
			continue
		case len(at) == 0:
			continue
		}
		if req.kind != "turn" && req.kind != "probe" {
			continue
		}
		answers := 0
		for _, m := range msgs[at[0]+1:] {
			if m.Role == pipeline.RoleUser {
				break
			}
			if m.Role == pipeline.RoleAssistant && m.Content == "done: "+req.text {
				answers++
			}
		}
		if outcome == "accepted" && answers == 1 {
			s.finished++
		} else if outcome == "accepted" {
			s.cut++
		}
		if outcome == "answered" && answers != 1 || answers > 1 {
			s.findAt("answers", msgs[at[0]].CreatedAt, "%s was answered 200, and its history has its answer %d times: %s", req.id, answers, req)
		}
	}
}

// checkFanOuts checks that each root task of a lead instance was
// reported once (a report turn's input names its root task), with no
// delegated task failed, and that the lead got as many reports as it
// made fan-outs that delegated.
func (s *soak) checkFanOuts(histories map[string][]pipeline.Message) {
	for where, msgs := range histories {
		if !strings.HasPrefix(where, "lead/") {
			continue
		}
		delegated, reported := 0, 0
		reports := map[string][]string{} // root task → its reports' messages
		var task string                  // the root task of the turn at hand
		for i, m := range msgs {
			switch {
			case m.Role == pipeline.RoleUser && m.Metadata["continues"] == nil:
				task, _ = m.Metadata["taskId"].(string)
				if task != "" && strings.Contains(m.Content, "(failed)") {
					// The helper never fails: a fault made its task fail.
					s.findAt("task-failed", m.CreatedAt, "%s %s: a report of root task %s says a delegated task failed: %s", where, m.ID, task, oneLine(m.Content[max(0, strings.Index(m.Content, "(failed)")-60):], 300))
				}
				if strings.HasPrefix(m.Content, "fan ") && slices.ContainsFunc(msgs[i+1:min(len(msgs), i+4)], func(r pipeline.Message) bool {
					return r.Role == pipeline.RoleTool && r.Name == "call_agent" && !r.IsError && strings.HasPrefix(r.Content, "Delegated to ")
				}) {
					delegated++
				}
			case m.Role == pipeline.RoleAssistant && m.Content == "LEAD-DONE":
				reported++
				reports[task] = append(reports[task], m.ID)
				if len(reports[task]) == 2 {
					s.findAt("fan-out", m.CreatedAt, "%s: root task %q was reported twice, in %v", where, task, reports[task])
				}
			}
		}
		if reported != delegated {
			s.find("fan-out", "%s: %d reports for %d fan-outs that delegated, after the quiet period", where, reported, delegated)
		}
	}
}

// soakMarkLine is a line of marks.log.
var soakMarkLine = regexp.MustCompile(`^gk-[0-9a-f]{32}$`)

// checkMarks checks that no command ran twice, that each ran for a call
// of a history, and that each call with a result that is not an error
// ran.
func (s *soak) checkMarks(histories map[string][]pipeline.Message, calls map[string]soakCall) {
	b, err := os.ReadFile(filepath.Join(s.dir, "workspace", "marks.log"))
	if err != nil {
		s.find("marks", "%v", err)
		return
	}
	ran := map[string]int{}
	for line := range strings.Lines(string(b)) {
		k := strings.TrimSpace(line)
		if !soakMarkLine.MatchString(k) {
			s.find("marks", "marks.log holds %q", line)
			continue
		}
		ran[k]++
	}
	for k, n := range ran {
		c, ok := calls[k]
		switch {
		case n > 1 && ok:
			s.find("rerun", "the command of %s call %s ran %d times (key %s)", c.where, c.call.ID, n, k)
		case n > 1:
			s.find("rerun", "a command ran %d times with key %s, which no call of the histories has", n, k)
		case !ok:
			s.find("unknown-mark", "a command ran with key %s, which no call of the histories has", k)
		}
	}
	for k, c := range calls {
		if c.call.Name != "execute_command" || ran[k] > 0 {
			continue
		}
		for _, m := range histories[c.where] {
			if m.Role == pipeline.RoleTool && m.ToolCallID == c.call.ID && !m.IsError {
				s.findAt("missing-mark", m.CreatedAt, "%s call %s of %s succeeded, and its command left no mark", c.where, c.call.ID, c.msgID)
			}
		}
	}
}

// before names the last fault at or before at.
func (s *soak) before(at time.Duration) string {
	var last *soakFault
	for _, f := range s.faults {
		if f.at <= at {
			last = f
		}
	}
	if last == nil {
		return "before any fault"
	}
	return fmt.Sprintf("%v after %s", (at - last.at).Round(time.Millisecond), last)
}

// report logs what the soak did and measured, and fails the test with
// what it found, each finding with the fault before it.
func (s *soak) report() {
	t := s.t
	// The load.
	outcomes := map[string]map[string]int{}
	retried := 0
	var okTook []time.Duration
	for _, req := range s.reqs {
		if outcomes[req.kind] == nil {
			outcomes[req.kind] = map[string]int{}
		}
		outcomes[req.kind][req.outcome]++
		sends := 0
		for _, a := range req.attempts {
			if a.what == "send" {
				sends++
			}
			if a.res.status == http.StatusOK && a.what != "look" && s.quiet(a.at) {
				okTook = append(okTook, a.res.took)
			}
		}
		if sends > 1 && req.kind != "probe" {
			retried++
		}
	}
	var lines []string
	for _, k := range []string{"turn", "ask", "fan", "probe"} {
		lines = append(lines, fmt.Sprintf("%s %v", k, outcomes[k]))
	}
	p50, pmax := percentiles(okTook)
	t.Logf("load: %s; %d requests sent again after a failed call; of the turns accepted though their call failed, %d finished and %d were cut; %d questions answered by the quiet period; %d instances sent a turn at the end for their cut calls' results; calls answered 200 away from faults: p50 %v, max %v",
		strings.Join(lines, ", "), retried, s.finished, s.cut, s.swept, s.settled, p50, pmax)
	unavailable, told := 0, 0
	for _, req := range s.reqs {
		for _, a := range req.attempts {
			if a.res.status == http.StatusServiceUnavailable {
				unavailable++
				if a.res.retryAfter != "" {
					told++
				}
			}
		}
	}
	t.Logf("503 answers: %d, %d of them with Retry-After", unavailable, told)

	// The faults, and what clients saw during each kind.
	byKind := map[string][]time.Duration{}
	seen := map[string]map[string]int{}
	worst := map[string]time.Duration{}
	samples := map[string]map[string][]string{} // kind → class → calls
	for _, f := range s.faults {
		if f.recovered {
			byKind[f.kind] = append(byKind[f.kind], f.recovery)
		}
		if seen[f.kind] == nil {
			seen[f.kind] = map[string]int{}
		}
		for _, req := range s.reqs {
			if req.kind == "probe" || req.kind == "check" {
				continue
			}
			for _, a := range req.attempts {
				// In flight at some moment of the fault or its recovery.
				if a.what != "look" && a.at+a.res.took >= f.at && a.at <= f.at+f.recovery+time.Second {
					seen[f.kind][a.res.class()]++
					if a.res.status == http.StatusOK {
						worst[f.kind] = max(worst[f.kind], a.res.took)
					} else if c := a.res.class(); len(samples[f.kind][c]) < 2 {
						if samples[f.kind] == nil {
							samples[f.kind] = map[string][]string{}
						}
						samples[f.kind][c] = append(samples[f.kind][c], fmt.Sprintf("%s %s via %s after %v: %s", req.id, a.what, a.proc, a.res.took.Round(time.Millisecond), a.res))
					}
				}
			}
		}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "| fault | faults | recovered | recovery p50 | recovery max | clients' calls during recovery | slowest 200 then |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, k := range []string{"kill", "term", "stall", "nats"} {
		n := 0
		for _, f := range s.faults {
			if f.kind == k {
				n++
			}
		}
		p50, pmax := percentiles(byKind[k])
		fmt.Fprintf(&table, "| %s | %d | %d | %v | %v | %s | %v |\n", k, n, len(byKind[k]), p50, pmax, tally(seen[k]), worst[k].Round(time.Millisecond))
	}
	for _, k := range []string{"kill", "term", "stall", "nats"} {
		var b strings.Builder
		for _, calls := range samples[k] {
			for _, c := range calls {
				fmt.Fprintf(&b, "\n  %s", c)
			}
		}
		if b.Len() > 0 {
			t.Logf("calls that failed during a %s and its recovery, examples:%s", k, b.String())
		}
	}
	t.Logf("recovery, from the fault until a probe turn on an instance the faulted process owned succeeds through another process (NATS: one on each process's):\n%s", table.String())
	var stops []string
	for _, st := range s.stops {
		stops = append(stops, fmt.Sprintf("%s %v exit %d", st.proc, st.took.Round(time.Millisecond), st.code))
	}
	t.Logf("stops (SIGTERM, --shutdown-timeout %v): %s", s.shutdown, strings.Join(stops, ", "))
	if path := os.Getenv("GANGLION_SOAK_REPORT"); path != "" || s.long {
		if path == "" {
			path = filepath.Join(os.TempDir(), fmt.Sprintf("ganglion-soak-%d.md", s.seed))
		}
		md := fmt.Sprintf("```\nGANGLION_SOAK=%v GANGLION_SOAK_SEED=%d go test -count=1 -timeout 0 -run TestClusterSoak -v ./cmd/ganglion/\n```\n\n"+
			"Three `ganglion serve` processes (`replicas: 3`, `lease_ttl: %v`, `--shutdown-timeout %v`) on three embedded NATS servers, %d faults over %v, %d requests. "+
			"Recovery: from the fault until a probe turn on an instance the faulted process owned succeeds through another process (a NATS server: one on an instance of each process); "+
			"a fault not recovered in %v is left out of the figures. The calls are the clients' calls in flight during the fault or its recovery.\n\n%s",
			s.duration, s.seed, soakLeaseTTL, s.shutdown, len(s.faults), s.duration, len(s.reqs), soakRecoveryBound, table.String())
		if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
			t.Errorf("write the recovery figures: %v", err)
		} else {
			t.Logf("recovery figures written to %s", path)
		}
	}

	// The findings, by check.
	byCheck := map[string][]soakFinding{}
	var checks []string
	for _, f := range s.findings {
		if byCheck[f.check] == nil {
			checks = append(checks, f.check)
		}
		byCheck[f.check] = append(byCheck[f.check], f)
	}
	for _, c := range checks {
		fs := byCheck[c]
		slices.SortStableFunc(fs, func(a, b soakFinding) int { return int(a.at - b.at) })
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %d findings", c, len(fs))
		for _, f := range fs[:min(len(fs), 5)] {
			fmt.Fprintf(&b, "\n  at %v (%s): %s", f.at.Round(time.Millisecond), s.before(f.at), f.text)
		}
		t.Errorf("%s", b.String())
	}
	s.dumps()
	if t.Failed() || os.Getenv("GANGLION_SOAK_KEEP") != "" {
		keep, err := os.MkdirTemp("", "ganglion-soak-")
		if err == nil {
			err = os.CopyFS(keep, os.DirFS(s.dir))
		}
		if err != nil {
			t.Logf("keeping the logs: %v", err)
		} else {
			t.Logf("the project, marks.log and the processes' logs (logs/NAME.START.log) are kept in %s", keep)
		}
	}
}

// quiet says whether no fault was under way at at (a fault lasts until
// its recovery, and a second more).
func (s *soak) quiet(at time.Duration) bool {
	for _, f := range s.faults {
		if at >= f.at && at <= f.at+f.recovery+time.Second {
			return false
		}
	}
	return true
}

// dumps logs, from each log with a goroutine dump, the goroutines that
// were in ganglion's own code, beyond the server's idle ones.
func (s *soak) dumps() {
	logs, _ := filepath.Glob(filepath.Join(s.logs, "*.log"))
	for _, path := range logs {
		b, _ := os.ReadFile(path)
		i := strings.Index(string(b), "SIGQUIT: quit")
		if i < 0 {
			continue
		}
		var kept []string
		for g := range strings.SplitSeq(string(b[i:]), "\n\n") {
			if strings.Contains(g, "ganglion-dev/ganglion/store") || strings.Contains(g, "(*Slot).Acquire") || strings.Contains(g, "forward") {
				kept = append(kept, compactStack(g))
			}
		}
		s.t.Logf("goroutine dump in %s: %d goroutines in the store, waiting for an instance or forwarding; the first ones:\n%s",
			filepath.Base(path), len(kept), strings.Join(kept[:min(len(kept), 4)], "\n\n"))
	}
}

// compactStack renders a goroutine of a dump on fewer lines: each frame
// as its function and file:line, without the scheduler's frames and the
// addresses, at most 12 frames.
func compactStack(g string) string {
	lines := strings.Split(strings.TrimSpace(g), "\n")
	out := []string{lines[0]}
	for i := 1; i+1 < len(lines) && len(out) <= 12; i += 2 {
		fn := lines[i]
		if strings.HasPrefix(fn, "runtime.") {
			continue
		}
		if j := strings.LastIndex(fn, "("); j > 0 {
			fn = fn[:j]
		}
		file := strings.Fields(lines[i+1] + " ")[0]
		out = append(out, "  "+fn+" "+file)
	}
	return strings.Join(out, "\n")
}

// percentiles returns the median and the maximum of ds.
func percentiles(ds []time.Duration) (p50, pmax time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond)
}

// tally renders counts as "200 ×12, 503 ×3", most first.
func tally(counts map[string]int) string {
	var keys []string
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return counts[b] - counts[a] })
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s ×%d", k, counts[k]))
	}
	return strings.Join(out, ", ")
}

package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// TestClusterSoak runs cluster mode as an operator's bad week would, in
// small: three ganglion serve processes on one config, on an embedded
// cluster of three NATS servers (replicas 3, leases of 4 s), under load
// (plain turns on many instances, questions answered through a random
// process, fan-outs to a worker agent), with a fault every few seconds:
//
//   - kill: SIGKILL of a process, started again at once;
//   - term: SIGTERM of a process, which must end within its
//     --shutdown-timeout (and a little slack), started again;
//   - stall: SIGSTOP of a process for twice the lease TTL, then SIGCONT;
//   - nats: one NATS server stopped, started again 1 to 3 s later.
//
// After the faults, a quiet period lets the cluster settle (open
// questions are answered then), and the checks read what the cluster
// kept, through the API:
//
//   - every request answered 200 is in its instance's history once, with
//     its answer once; no request is stored twice (a request whose call
//     failed is retried only once the history shows it was not taken);
//   - no command ran twice: each appends its call's idempotency key to
//     marks.log, and no key may be there twice, or be no call's;
//   - every history is well formed: message numbers increase, every tool
//     call has exactly one result, right after the call;
//   - no task and no pending item is left open, and every answered
//     question's resume turn finished;
//   - every fan-out was reported to its lead exactly once, and none of
//     its delegated tasks failed (the helper never fails: a fault did);
//   - every stop ended within its timeout, with exit code 0;
//   - no call was answered 500: what a fault causes is transient, and
//     says so with a 503; none 499 (the client cancels nothing);
//   - no request went unanswered for soakRequestTimeout, and the cluster
//     served again within soakRecoveryBound of each fault.
//
// It measures, per kind of fault, how long the cluster takes to serve
// again: from the fault until a probe turn succeeds on an instance the
// faulted process owned (or, for a NATS server, on an instance of each
// process), sent through another process.
//
// A process that does not stop in time, a request that hangs, or a
// cluster that does not recover gets its goroutines dumped (SIGQUIT) into
// its log; the logs are kept, and their directory logged, when the test
// fails.
//
// Environment:
//
//	GANGLION_SOAK=D         the faults last D (a Go duration; default 60s)
//	GANGLION_SOAK_SEED=S    the seed (default: from the clock; it is logged)
//	GANGLION_SOAK_REPORT=F  write the recovery figures, as a table for
//	                        BENCHMARKS.md, to F (with GANGLION_SOAK: to a
//	                        file in the temporary directory, logged)
//	GANGLION_SOAK_KEEP=1    keep the logs and the project even if it passes
func TestClusterSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three ganglion processes under faults for a minute: skipped with -short")
	}
	s := newSoak(t)
	s.warm()
	load := s.load(5)
	s.runFaults()
	s.settle(load)
	s.check()
	s.stopAll()
	s.report()
}

// The soak's timings.
const (
	soakLeaseTTL        = 4 * time.Second
	soakShutdown        = 10 * time.Second // each process's --shutdown-timeout: the default, which a store request's bound fits in
	soakStopSlack       = 5 * time.Second  // what a stop may take beyond it
	soakRequestTimeout  = 30 * time.Second // a turn's call: well above a stall
	soakReadTimeout     = 10 * time.Second // a read's call
	soakRecoveryBound   = 30 * time.Second // a fault's recovery
	soakLookBound       = 60 * time.Second // reading a history to see whether a request was taken
	soakOpBound         = 2 * time.Minute  // one operation of the load, retries included
	soakLoadStopBound   = 3 * time.Minute  // the load's operations in flight, once it stops
	soakQuietPeriod     = 45 * time.Second // at most, for tasks and questions to settle
	soakDefaultDuration = 60 * time.Second
)

const soakConfig = `workspace: workspace
model:
  provider: scripted
  script: script.yaml
agents:
  - name: worker
    tools: [execute_command]
  - name: asker
    tools: [execute_command]
    extensions: [{name: protocol}]
  - name: lead
    tools: [call_agent]
  - name: helper
    tools: [execute_command]
cluster:
  url: %q
  replicas: 3
  lease_ttl: %s
`

// soakMark is the command the scripts run: it appends its call's
// idempotency key to marks.log, then takes a while, so that faults land
// in commands too.
const soakMark = `echo \"$GANGLION_IDEMPOTENCY_KEY\" >> marks.log; sleep `

const soakScript = `agents:
  worker:
    turns:
      - match: "^settle "
        steps: [{text: "settled"}]
    fallback:
      steps:
        - tool_calls: [{name: execute_command, args: {command: "` + soakMark + `0.1"}}]
        - text: "done: {{ .Input }}"
  asker:
    turns:
      - match: "^settle "
        steps: [{text: "settled"}]
      - kind: resume
        steps:
          - tool_calls: [{name: execute_command, args: {command: "` + soakMark + `1"}}]
          - text: "asker got it"
    fallback:
      steps:
        - text: |
            [USER_QUESTION]
            category: choice
            question: Go on?
            options: [yes, no]
            required: true
            [/USER_QUESTION]
  lead:
    turns:
      - kind: delegation_report
        steps: [{text: "LEAD-DONE"}]
      - match: "^settle "
        steps: [{text: "settled"}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, args: {agent_id: helper, message: "part one"}}
            - {name: call_agent, args: {agent_id: helper, message: "part two"}}
        - text: "delegated"
  helper:
    fallback:
      steps:
        - tool_calls: [{name: execute_command, args: {command: "` + soakMark + `0.1"}}]
        - text: "helper done"
`

// soak is one run of TestClusterSoak.
type soak struct {
	t        *testing.T
	bin, dir string
	logs     string // the processes' logs
	env      []string
	shutdown time.Duration
	duration time.Duration // of the faults
	long     bool          // GANGLION_SOAK set
	seed     uint64
	rng      *rand.Rand // the fault loop's
	nats     *natstest.TestCluster
	procs    []*soakProc
	http     *http.Client
	began    time.Time
	nextID   atomic.Int64
	askKeys  chan string // the asker's instances no question uses now
	pools    map[string][]string

	mu       sync.Mutex
	reqs     []*soakReq
	faults   []*soakFault
	findings []soakFinding
	stops    []soakStop
	stuck    map[*soakProc]string // processes a request hung on, and the request
	swept    int                  // questions the quiet period answered
	finished int                  // requests accepted after a failed call that the history shows answered
	cut      int                  // ... and not answered
	settled  int                  // instances a turn was sent to at the end, for their cut calls' results
	quietAt  time.Duration        // when the quiet period began
}

// soakFinding is an invariant the soak saw broken, and when.
type soakFinding struct {
	check string
	at    time.Duration
	text  string
}

// soakFault is one fault and how long the cluster took to serve again.
type soakFault struct {
	n            int
	kind, target string
	at           time.Duration
	recovery     time.Duration
	recovered    bool
	note         string   // what the fault loop saw
	lastProbe    *soakReq // set by measure
}

func (f *soakFault) String() string {
	return fmt.Sprintf("fault %d (%s %s at %v)", f.n, f.kind, f.target, f.at.Round(time.Millisecond))
}

// soakStop is a SIGTERM and how the process ended.
type soakStop struct {
	proc    string
	took    time.Duration
	inTime  bool
	code    int
	logPath string
}

func newSoak(t *testing.T) *soak {
	s := &soak{t: t, duration: soakDefaultDuration, shutdown: soakShutdown, seed: uint64(time.Now().UnixNano()),
		stuck: map[*soakProc]string{}}
	if v := os.Getenv("GANGLION_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("GANGLION_SOAK=%q: want a duration (10m): %v", v, err)
		}
		s.duration, s.long = d, true
	}
	if v := os.Getenv("GANGLION_SOAK_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("GANGLION_SOAK_SEED=%q: %v", v, err)
		}
		s.seed = n
	}
	s.rng = rand.New(rand.NewPCG(s.seed, 0))
	t.Logf("seed %d (reproduce the draws with GANGLION_SOAK_SEED=%d), faults for %v", s.seed, s.seed, s.duration)
	s.bin = cliBinary(t)
	s.nats = natstest.NewCluster(t, 3)
	s.dir = t.TempDir()
	s.logs = filepath.Join(s.dir, "logs")
	must(t, os.MkdirAll(filepath.Join(s.dir, "workspace"), 0o755))
	must(t, os.MkdirAll(s.logs, 0o755))
	must(t, os.WriteFile(filepath.Join(s.dir, "ganglion.yaml"), fmt.Appendf(nil, soakConfig, s.nats.URLs(), soakLeaseTTL), 0o644))
	must(t, os.WriteFile(filepath.Join(s.dir, "script.yaml"), []byte(soakScript), 0o644))
	s.env = append(childEnv(), runtime.SecretKeyEnv+"="+base64.StdEncoding.EncodeToString(make([]byte, 32)))
	s.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	t.Cleanup(s.http.CloseIdleConnections)
	n := map[bool][3]int{false: {24, 6, 4}, true: {200, 20, 10}}[s.long]
	s.pools = map[string][]string{}
	for i, agent := range []string{"worker", "asker", "lead"} {
		for k := range n[i] {
			s.pools[agent] = append(s.pools[agent], fmt.Sprintf("%s-%d", agent[:1], k))
		}
	}
	s.askKeys = make(chan string, len(s.pools["asker"]))
	for _, k := range s.pools["asker"] {
		s.askKeys <- k
	}
	s.began = time.Now()
	// Whatever happens, no process outlives the test.
	t.Cleanup(func() {
		for _, p := range s.procs {
			p.mu.Lock()
			cmd, exited := p.cmd, p.exited
			p.mu.Unlock()
			if cmd != nil {
				cmd.Process.Kill()
				<-exited
			}
		}
	})
	for i := range 3 {
		p := &soakProc{name: fmt.Sprintf("p%d", i+1), data: filepath.Join(s.dir, fmt.Sprintf("p%d", i+1), "data")}
		s.procs = append(s.procs, p)
		if err := s.start(p); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// since is the time since the soak began.
func (s *soak) since() time.Duration { return time.Since(s.began) }

// find records a broken invariant.
func (s *soak) find(check, format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.findings = append(s.findings, soakFinding{check, s.since(), fmt.Sprintf(format, args...)})
}

// findDuring records a broken invariant about something that began at
// at, since the soak began.
func (s *soak) findDuring(check string, at time.Duration, format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.findings = append(s.findings, soakFinding{check, at, fmt.Sprintf(format, args...)})
}

// pick returns a process, at random among those up other than not.
func (s *soak) pick(rng *rand.Rand, not *soakProc) *soakProc {
	var up []*soakProc
	for _, p := range s.procs {
		p.mu.Lock()
		if p.up && p != not {
			up = append(up, p)
		}
		p.mu.Unlock()
	}
	if len(up) == 0 {
		return s.procs[rng.IntN(len(s.procs))]
	}
	return up[rng.IntN(len(up))]
}

// warm sends a first turn through each process, which checks the
// cluster serves before any fault.
func (s *soak) warm() {
	for _, p := range s.procs {
		req := s.newReq("turn", "worker", "warm-"+p.name)
		if r := s.attempt(req, "send", p, "POST", req.path(), req.body(), soakRequestTimeout); r.status != http.StatusOK {
			s.t.Fatalf("the first turn through %s: %s", p.name, r)
		}
		req.setOutcome("answered")
	}
}

// runFaults injects faults, one at a time, until the soak's duration has
// passed, and measures each one's recovery.
func (s *soak) runFaults() {
	kinds := []string{"kill", "term", "stall", "nats"}
	var bag []string
	end := time.Now().Add(s.duration)
	for n := 1; time.Now().Before(end); n++ {
		if len(bag) == 0 { // each kind once per round, in a random order
			bag = slices.Clone(kinds)
			s.rng.Shuffle(len(bag), func(i, j int) { bag[i], bag[j] = bag[j], bag[i] })
		}
		kind := bag[0]
		bag = bag[1:]
		s.fault(n, kind)
		s.unstick()
		gap := time.Second + time.Duration(s.rng.Int64N(int64(3*time.Second)))
		if s.long {
			gap = 3*time.Second + time.Duration(s.rng.Int64N(int64(7*time.Second)))
		}
		time.Sleep(gap)
	}
}

// fault injects one fault of kind and waits for the cluster to serve
// again.
func (s *soak) fault(n int, kind string) {
	f := &soakFault{n: n, kind: kind}
	var (
		target *soakProc
		keys   []string
	)
	if kind == "nats" {
		for _, p := range s.procs {
			keys = append(keys, s.own(f, p))
		}
	} else {
		target = s.pick(s.rng, nil)
		f.target = target.name
		keys = append(keys, s.own(f, target))
	}
	s.mu.Lock()
	s.faults = append(s.faults, f)
	s.mu.Unlock()
	f.at = s.since()
	recovered := make(chan struct{})
	go func() {
		defer close(recovered)
		s.measure(f, keys, target)
	}()
	switch kind {
	case "kill":
		if _, ok := s.end(target, syscall.SIGKILL, 10*time.Second); !ok {
			s.find("kill", "%s: %s did not end within 10 s of SIGKILL", f, target.name)
		}
		s.restart(f, target)
	case "term":
		took, inTime := s.end(target, syscall.SIGTERM, s.shutdown+soakStopSlack)
		s.stopped(target, took, inTime)
		f.note = fmt.Sprintf("ended in %v, exit %d", took.Round(time.Millisecond), target.exitCode())
		s.restart(f, target)
	case "stall":
		target.signal(syscall.SIGSTOP)
		target.mu.Lock()
		target.frozen = true
		target.mu.Unlock()
		time.Sleep(2 * soakLeaseTTL)
		target.signal(syscall.SIGCONT)
		target.mu.Lock()
		target.frozen = false
		target.mu.Unlock()
	case "nats":
		i := s.rng.IntN(3)
		f.target = fmt.Sprintf("s%d", i+1)
		down := time.Second + time.Duration(s.rng.Int64N(int64(2*time.Second)))
		s.nats.Stop(i)
		time.Sleep(down)
		s.nats.Start(i)
		f.note = fmt.Sprintf("down %v", down.Round(time.Millisecond))
	}
	<-recovered
	if !f.recovered {
		s.find("recovery", "%s: the cluster did not serve a probe turn within %v (%s); the last probe: %s; every process's goroutines dumped to its log", f, soakRecoveryBound, f.note, f.lastProbe)
		for _, p := range s.procs {
			s.dump(p, "the cluster did not recover")
		}
		s.t.Logf("%s: NOT recovered in %v %s", f, soakRecoveryBound, f.note)
		return
	}
	s.t.Logf("%s: recovered in %v %s", f, f.recovery.Round(time.Millisecond), f.note)
}

// own makes, before fault f, an instance that p owns, with a first turn
// sent through p, for the probes of f's recovery; it returns its key.
func (s *soak) own(f *soakFault, p *soakProc) string {
	key := fmt.Sprintf("probe-%d-%s", f.n, p.name)
	req := s.newReq("probe", "worker", key)
	for range 3 {
		if r := s.attempt(req, "send", p, "POST", req.path(), req.body(), soakRequestTimeout); r.status == http.StatusOK {
			req.setOutcome("answered")
			return key
		} else if !r.refused() {
			req.setOutcome("unknown")
			f.note += fmt.Sprintf("[%s did not take the probe's instance before the fault: %s] ", p.name, r)
			return key
		}
		time.Sleep(time.Second)
	}
	return key
}

// measure sends probe turns on each of keys, through a process other than
// not, until one succeeds on each, and sets f's recovery to when the last
// one did.
func (s *soak) measure(f *soakFault, keys []string, not *soakProc) {
	rng := rand.New(rand.NewPCG(s.seed, uint64(f.n)))
	deadline := s.began.Add(f.at + soakRecoveryBound)
	for _, key := range keys {
		for {
			if time.Now().After(deadline) {
				return
			}
			req := s.newReq("probe", "worker", key)
			f.lastProbe = req
			p := s.pick(rng, not)
			r := s.attempt(req, "send", p, "POST", req.path(), req.body(), min(soakReadTimeout, time.Until(deadline)))
			if r.status == http.StatusOK {
				req.setOutcome("answered")
				break
			}
			req.setOutcome("unknown")
			time.Sleep(100 * time.Millisecond)
		}
	}
	f.recovery, f.recovered = s.since()-f.at, true
}

// restart starts p again after fault f ended it.
func (s *soak) restart(f *soakFault, p *soakProc) {
	if err := s.start(p); err != nil {
		s.find("start", "after %s: %v", f, err)
		// One more try: the soak needs its three processes.
		if err := s.start(p); err != nil {
			s.t.Fatalf("after %s: %v", f, err)
		}
	}
}

// stopped records a SIGTERM's outcome.
func (s *soak) stopped(p *soakProc, took time.Duration, inTime bool) {
	p.mu.Lock()
	logPath := p.logPath
	p.mu.Unlock()
	st := soakStop{proc: p.name, took: took, inTime: inTime, code: p.exitCode(), logPath: logPath}
	s.mu.Lock()
	s.stops = append(s.stops, st)
	s.mu.Unlock()
	if !inTime {
		s.find("stop", "%s did not end within --shutdown-timeout %v + %v of SIGTERM; goroutines dumped to %s", p.name, s.shutdown, soakStopSlack, filepath.Base(logPath))
	} else if st.code != 0 {
		s.find("stop", "%s ended %v after SIGTERM with exit code %d: %s", p.name, took.Round(time.Millisecond), st.code, lastLines(logPath, 3))
	}
}

// dump dumps p's goroutines to its log (SIGQUIT, which ends it) and
// starts it again.
func (s *soak) dump(p *soakProc, why string) {
	p.mu.Lock()
	cmd, exited, gen := p.cmd, p.exited, p.gen
	p.up = false
	p.mu.Unlock()
	s.quit(cmd, exited)
	s.t.Logf("%v: dumped the goroutines of %s.%d (%s)", s.since().Round(time.Millisecond), p.name, gen, why)
	if err := s.start(p); err != nil {
		s.t.Fatalf("starting %s again after its dump: %v", p.name, err)
	}
}

// unstick dumps, and starts again, the processes a request hung on.
func (s *soak) unstick() {
	s.mu.Lock()
	stuck := s.stuck
	s.stuck = map[*soakProc]string{}
	s.mu.Unlock()
	for p, why := range stuck {
		s.dump(p, why)
	}
}

// lastLines returns the last n lines of the file at path, on one line.
func lastLines(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// soakReq is one operation of the load: a turn, a question and its
// answer, a fan-out, or a probe.
type soakReq struct {
	id, kind, agent, key string
	text                 string
	mu                   sync.Mutex
	attempts             []soakAttempt
	// outcome: answered (200), accepted (a call failed, and the history
	// showed the request taken), refused (never taken), unknown (a probe
	// that failed: not looked up).
	outcome string
	turnID  string
	itemID  string
}

// soakAttempt is one call made for a request.
type soakAttempt struct {
	what string // send, answer, look
	proc string
	at   time.Duration
	res  soakResponse
}

func (s *soak) newReq(kind, agent, key string) *soakReq {
	id := fmt.Sprintf("r%d", s.nextID.Add(1))
	req := &soakReq{id: id, kind: kind, agent: agent, key: key, text: kind + " " + id}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	return req
}

func (r *soakReq) path() string { return "/v1/agents/" + r.agent + "/instances/" + r.key + "/messages" }
func (r *soakReq) body() string { return fmt.Sprintf(`{"text": %q}`, r.text) }

// String lists the request's calls, for the report.
func (r *soakReq) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q on %s/%s (%s)", r.id, r.text, r.agent, r.key, r.outcome)
	for _, a := range r.attempts {
		fmt.Fprintf(&b, "; %s via %s at %v: %s after %v", a.what, a.proc, a.at.Round(time.Millisecond), a.res, a.res.took.Round(time.Millisecond))
	}
	return b.String()
}

// attempt makes one call for req on p and records it. A call that got no
// answer in soakRequestTimeout marks p stuck: the fault loop dumps its
// goroutines.
func (s *soak) attempt(req *soakReq, what string, p *soakProc, method, path, body string, timeout time.Duration) soakResponse {
	at := s.since()
	r := s.call(p, method, path, body, timeout)
	req.mu.Lock()
	req.attempts = append(req.attempts, soakAttempt{what, p.name, at, r})
	req.mu.Unlock()
	if r.status == 499 {
		// The client cancelled nothing: the server gave up on its own.
		s.find("499", "%s: %s %s via %s: %s", req.id, method, path, p.name, r)
	}
	if r.status == http.StatusInternalServerError {
		// A fault is a transient outage, which a client should be told it
		// may retry: 503, not 500.
		s.find("500", "%s: %s %s via %s: %s", req.id, method, path, p.name, r)
	}
	if r.err != nil && r.String() == "no answer in time" && timeout >= soakRequestTimeout {
		p.mu.Lock()
		frozen := p.frozen
		p.mu.Unlock()
		if !frozen {
			s.findDuring("hang", at, "%s: %s %s via %s, sent at %v, got no answer in %v", req.id, method, path, p.name, at.Round(time.Millisecond), timeout)
			s.mu.Lock()
			s.stuck[p] = fmt.Sprintf("%s hung on it", req.id)
			s.mu.Unlock()
		}
	}
	return r
}

// load starts n clients; the function it returns stops them and waits
// for their operations in flight (at most soakLoadStopBound).
func (s *soak) load(n int) func() {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(s.seed, uint64(1000+c)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				switch x := rng.IntN(10); {
				case x < 6:
					s.turn(rng, "worker", "turn")
				case x < 8:
					s.question(rng)
				default:
					s.turn(rng, "lead", "fan")
				}
				time.Sleep(time.Duration(20+rng.IntN(100)) * time.Millisecond)
			}
		}()
	}
	return func() {
		close(stop)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(soakLoadStopBound):
			s.find("load", "the load's operations were still running %v after it stopped", soakLoadStopBound)
		}
	}
}

// turnResult is what a turn's call answers.
type turnResult struct {
	Result struct {
		TurnID       string `json:"turn_id"`
		FinishReason string `json:"finish_reason"`
		TaskID       string `json:"task_id"`
		Response     struct {
			Content string `json:"content"`
		} `json:"response"`
	} `json:"result"`
}

// turn sends a turn of kind (turn: to the worker; fan: to the lead, which
// delegates) on a random instance of agent, and checks its answer.
func (s *soak) turn(rng *rand.Rand, agent, kind string) {
	pool := s.pools[agent]
	req := s.newReq(kind, agent, pool[rng.IntN(len(pool))])
	res, ok := s.send(rng, req)
	if !ok {
		return
	}
	want := map[string]string{"turn": "done: " + req.text, "fan": "delegated"}[kind]
	if res.Result.Response.Content != want {
		s.find("answer", "%s answered %q (%s), want %q", req.id, res.Result.Response.Content, res.Result.FinishReason, want)
	}
}

// send sends req's message until a call is answered 200 or the history
// shows the request taken; it retries a call that failed only once the
// history shows the request was not taken.
func (s *soak) send(rng *rand.Rand, req *soakReq) (turnResult, bool) {
	var res turnResult
	deadline := time.Now().Add(soakOpBound)
	for time.Now().Before(deadline) {
		p := s.pick(rng, nil)
		r := s.attempt(req, "send", p, "POST", req.path(), req.body(), soakRequestTimeout)
		switch {
		case r.status == http.StatusOK:
			if err := json.Unmarshal(r.body, &res); err != nil {
				s.find("answer", "%s: %v in %s", req.id, err, r.body)
			}
			req.mu.Lock()
			req.outcome, req.turnID = "answered", res.Result.TurnID
			req.mu.Unlock()
			return res, true
		case r.refused():
			time.Sleep(100 * time.Millisecond)
			continue // never received
		case r.status >= 400 && r.status < 500 && r.status != 499:
			s.find("status", "%s: %s", req.id, r)
			req.setOutcome("refused")
			return res, false
		}
		// 5xx, 499, a closed connection, no answer: taken or not?
		if taken, known := s.taken(rng, req); taken || !known {
			req.setOutcome("accepted")
			return res, false
		}
		time.Sleep(2*soakLeaseTTL + time.Second) // a stalled owner's commit would show by then
		if taken, known := s.taken(rng, req); taken || !known {
			req.setOutcome("accepted")
			return res, false
		}
	}
	req.setOutcome("refused")
	return res, false
}

func (r *soakReq) setOutcome(o string) {
	r.mu.Lock()
	r.outcome = o
	r.mu.Unlock()
}

// taken reads req's instance's history and says whether req's message is
// in it; known is false when no process answered for soakLookBound.
func (s *soak) taken(rng *rand.Rand, req *soakReq) (taken, known bool) {
	deadline := time.Now().Add(soakLookBound)
	for time.Now().Before(deadline) {
		r := s.attempt(req, "look", s.pick(rng, nil), "GET", "/v1/agents/"+req.agent+"/instances/"+req.key+"/history", "", soakReadTimeout)
		if r.status == http.StatusOK {
			var h soakHistory
			if err := json.Unmarshal(r.body, &h); err != nil {
				s.find("history", "%s/%s: %v", req.agent, req.key, err)
				return false, false
			}
			return slices.ContainsFunc(h.Messages, func(m pipeline.Message) bool { return m.Role == pipeline.RoleUser && m.Content == req.text }), true
		}
		if r.status == http.StatusNotFound {
			return false, true
		}
		time.Sleep(500 * time.Millisecond)
	}
	s.find("read", "%s: no process answered a read of %s/%s for %v", req.id, req.agent, req.key, soakLookBound)
	return false, false
}

// question asks on a free instance of the asker, and answers the
// question through a random process.
func (s *soak) question(rng *rand.Rand) {
	var key string
	select {
	case key = <-s.askKeys:
	default:
		s.turn(rng, "worker", "turn") // every asker is busy
		return
	}
	defer func() { s.askKeys <- key }()
	req := s.newReq("ask", "asker", key)
	res, ok := s.send(rng, req)
	if ok && res.Result.FinishReason != "paused" {
		s.find("answer", "%s: the question's turn finished %s, want paused", req.id, res.Result.FinishReason)
	}
	// Answer what the instance waits for: this question, or one a call
	// that failed left open.
	s.answerOpen(rng, req)
}

// soakItem is a pending item, as the API lists it.
type soakItem struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	Agent     string    `json:"agent"`
	Instance  string    `json:"instance"`
	TurnID    string    `json:"turn_id"`
	Status    string    `json:"status"`
	Open      bool      `json:"open"`
	ResumedBy string    `json:"resumed_by"`
	UpdatedAt time.Time `json:"updated_at"`
}

// pending lists the pending items (open ones, or all) of an instance
// (key "": of every instance), through any process that answers.
func (s *soak) pending(rng *rand.Rand, req *soakReq, query string) ([]soakItem, bool) {
	deadline := time.Now().Add(soakLookBound)
	for time.Now().Before(deadline) {
		r := s.attempt(req, "look", s.pick(rng, nil), "GET", "/v1/pending?"+query, "", soakReadTimeout)
		if r.status == http.StatusOK {
			var out struct{ Items []soakItem }
			if err := json.Unmarshal(r.body, &out); err != nil {
				s.find("pending", "%v in %s", err, r.body)
				return nil, false
			}
			return out.Items, true
		}
		time.Sleep(500 * time.Millisecond)
	}
	s.find("read", "%s: no process listed the pending items for %v", req.id, soakLookBound)
	return nil, false
}

// answerOpen answers the open questions of req's instance, each through
// a random process, until each is answered 200 or no longer open.
func (s *soak) answerOpen(rng *rand.Rand, req *soakReq) {
	items, ok := s.pending(rng, req, "agent=asker&instance="+req.key)
	if !ok {
		return
	}
	for _, it := range items {
		s.answer(rng, req, it)
	}
}

// answer answers item it for req.
func (s *soak) answer(rng *rand.Rand, req *soakReq, it soakItem) {
	req.mu.Lock()
	req.itemID = it.ID
	req.mu.Unlock()
	deadline := time.Now().Add(soakOpBound)
	for time.Now().Before(deadline) {
		r := s.attempt(req, "answer", s.pick(rng, nil), "POST", "/v1/pending/"+it.ID+"/answer", `{"answer": "yes"}`, soakRequestTimeout)
		switch {
		case r.status == http.StatusOK:
			var res turnResult
			json.Unmarshal(r.body, &res)
			if res.Result.Response.Content != "asker got it" {
				s.find("answer", "%s: the answer to %s resumed with %q (%s), want %q; it answered %s; %s", req.id, it.ID, res.Result.Response.Content, res.Result.FinishReason, "asker got it", oneLine(string(r.body), 600), req)
			}
			return
		case r.status == http.StatusConflict && strings.Contains(string(r.body), "already_resolved"):
			return // an earlier call that failed took it
		case r.refused():
			time.Sleep(100 * time.Millisecond)
			continue
		case r.status >= 400 && r.status < 500 && r.status != 499:
			s.find("status", "%s: answer %s: %s", req.id, it.ID, r)
			return
		}
		time.Sleep(2*soakLeaseTTL + time.Second)
		items, ok := s.pending(rng, req, "agent=asker&instance="+req.key)
		if !ok || !slices.ContainsFunc(items, func(o soakItem) bool { return o.ID == it.ID }) {
			return // answered by the call that failed
		}
	}
}

// settle stops the load, makes sure every process and NATS server is up,
// and gives the cluster a quiet period: open questions are answered, and
// it ends when no task and no question is open (at most
// soakQuietPeriod).
func (s *soak) settle(stopLoad func()) {
	s.unstick()
	stopLoad()
	s.unstick()
	s.quietAt = s.since()
	s.t.Logf("%v: faults and load stopped; quiet period", s.quietAt.Round(time.Millisecond))
	rng := rand.New(rand.NewPCG(s.seed, 2))
	req := s.newReq("sweep", "asker", "-")
	deadline := time.Now().Add(soakQuietPeriod)
	for time.Now().Before(deadline) {
		time.Sleep(time.Second)
		items, ok := s.pending(rng, req, "")
		for _, it := range items {
			s.mu.Lock()
			s.swept++
			s.mu.Unlock()
			s.answer(rng, req, it)
		}
		tasks, tok := s.tasks(rng, req)
		if ok && tok && len(items) == 0 && len(tasks) == 0 && s.since()-s.quietAt > 2*soakLeaseTTL {
			return
		}
	}
}

// tasks lists the open tasks through any process that answers.
func (s *soak) tasks(rng *rand.Rand, req *soakReq) ([]json.RawMessage, bool) {
	deadline := time.Now().Add(soakLookBound)
	for time.Now().Before(deadline) {
		r := s.attempt(req, "look", s.pick(rng, nil), "GET", "/v1/tasks", "", soakReadTimeout)
		if r.status == http.StatusOK {
			var out struct{ Tasks []json.RawMessage }
			if err := json.Unmarshal(r.body, &out); err != nil {
				s.find("tasks", "%v in %s", err, r.body)
				return nil, false
			}
			return out.Tasks, true
		}
		time.Sleep(500 * time.Millisecond)
	}
	s.find("read", "no process listed the tasks for %v", soakLookBound)
	return nil, false
}

// stopAll stops every process with SIGTERM, as an operator would at the
// end, and records how each stop went.
func (s *soak) stopAll() {
	var wg sync.WaitGroup
	for _, p := range s.procs {
		wg.Go(func() {
			took, inTime := s.end(p, syscall.SIGTERM, s.shutdown+soakStopSlack)
			s.stopped(p, took, inTime)
		})
	}
	wg.Wait()
}

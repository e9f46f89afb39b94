//go:build unix

package jetstream_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/store/jetstream"
)

// TestJetStreamCommitSurvivesKill: a process committing to the JetStream
// store is killed with SIGKILL at random points, three times: every commit
// it was told of is there, and each is whole (the meta's count of records
// matches the records), whatever the batch the kill cut.
func TestJetStreamCommitSurvivesKill(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := natstest.Server(t)
	ctx := context.Background()
	acked := int64(0)
	for round := range 3 {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), writerEnv+"="+srv.ClientURL())
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		want := acked + 20 + int64(round)*7 // kill at a different point each round
		for sc.Scan() {
			n, _ := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64)
			acked = max(acked, n)
			if n >= want {
				break
			}
		}
		time.Sleep(time.Duration(round) * time.Millisecond)
		syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		for sc.Scan() { // what it printed before it died was committed too
			n, _ := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64)
			acked = max(acked, n)
		}
		cmd.Wait()

		nc, err := nats.Connect(srv.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		s, err := jetstream.Open(ctx, nc, "crash")
		if err != nil {
			t.Fatal(err)
		}
		m, records, _, err := s.LoadInstance(ctx, "a", "k")
		if err != nil {
			t.Fatal(err)
		}
		if m.Turns < acked {
			t.Fatalf("round %d: %d turns stored, %d acknowledged: a commit was lost", round, m.Turns, acked)
		}
		if m.NextSeq != uint64(len(records)) || m.NextSeq != uint64(m.Turns)*5 {
			t.Fatalf("round %d: meta %+v with %d records: a commit is in part", round, m, len(records))
		}
		for i, r := range records {
			if r.Seq != uint64(i) {
				t.Fatalf("round %d: record %d has seq %d", round, i, r.Seq)
			}
		}
		acked = m.Turns // the next writer goes on from what is stored
		s.Close()
		nc.Close()
	}
}

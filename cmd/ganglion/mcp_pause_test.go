package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ganglion-dev/ganglion/ledger"
)

// pauseConfig has an agent for each way a turn pauses: lead delegates to
// middle, which delegates to asker, which asks a required question;
// strict asks one too; picker an optional one with options; keeper for an
// API key; filer for an optional file; reader calls a tool that needs an
// approval; looper asks again whatever it is told.
const pauseConfig = `workspace: workspace
model: {provider: scripted, script: script.yaml}
agents:
  - name: lead
    tools: [call_agent]
    extensions: [{name: protocol}]
  - name: middle
    tools: [call_agent]
    extensions: [{name: protocol}]
  - name: asker
    extensions: [{name: protocol}]
  - name: strict
    extensions: [{name: protocol}]
  - name: picker
    extensions: [{name: protocol}]
  - name: keeper
    extensions: [{name: protocol}]
  - name: filer
    extensions: [{name: protocol}]
  - name: reader
    tools: [read_file]
    extensions: [{name: approval, config: {rules: rules.yaml}}]
  - name: looper
    extensions: [{name: protocol}]
`

const pauseScript = `agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "lead done: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: middle, message: "ask the asker"}}]
        - text: "waiting"
  middle:
    turns:
      - match: "Delegation report"
        steps: [{text: "middle done"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: asker, message: "find out"}}]
        - text: "waiting"
  asker:
    turns:
      - match: "^Answer to your question"
        steps: [{text: "asker got: {{ .Input }}"}]
    fallback:
      steps:
        - text: |
            [USER_QUESTION]
            category: clarification
            question: Which grammar?
            required: true
            [/USER_QUESTION]
  strict:
    turns:
      - match: "^Answer to your question"
        steps: [{text: "strict got: {{ .Input }}"}]
    fallback:
      steps:
        - text: |
            [USER_QUESTION]
            category: clarification
            question: Which region?
            required: true
            [/USER_QUESTION]
  picker:
    turns:
      - match: "^(Answer to your question|Your question)"
        steps: [{text: "picker got: {{ .Input }}"}]
    fallback:
      steps:
        - text: |
            [USER_QUESTION]
            category: business
            question: What pricing model?
            options: [Subscription, Freemium, Ad-based]
            default: Freemium
            required: false
            [/USER_QUESTION]
  keeper:
    turns:
      - match: "^The dependency"
        steps: [{text: "keeper got the key"}]
    fallback:
      steps:
        - text: |
            [DEPENDENCY_REQUEST]
            type: api_key
            name: OPENAI_API_KEY
            description: Required for OpenAI API integration
            required: true
            [/DEPENDENCY_REQUEST]
  filer:
    turns:
      - match: "(?i)(file|dependency)"
        steps: [{text: "filer got: {{ .Input }}"}]
    fallback:
      steps:
        - text: |
            [DEPENDENCY_REQUEST]
            type: file
            name: data
            description: the data to load
            required: false
            [/DEPENDENCY_REQUEST]
  reader:
    turns:
      - match: "^A human"
        steps: [{text: "reader got: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: read_file, id: r1, args: {path: a.txt}}]
  looper:
    fallback:
      steps:
        - text: |
            [USER_QUESTION]
            category: clarification
            question: Once more?
            required: true
            [/USER_QUESTION]
`

// pauseProject writes a project of pauseConfig and returns its directory.
func pauseProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "workspace"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "workspace", "a.txt"), []byte("alpha\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte("default: approve\nrules:\n  - name: reads need a human\n    when: tool.name == \"read_file\"\n    decision: ask\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(pauseConfig), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(pauseScript), 0o644))
	return dir
}

var itemIDRE = regexp.MustCompile(`p-[0-9a-f]{12}`)

// TestMCPPausedResultListsItsOwn: a call whose delegation chain stops at
// a question two agents down returns at once, paused, and lists that
// question only: not the item another agent waits for.
func TestMCPPausedResultListsItsOwn(t *testing.T) {
	dir := pauseProject(t)
	cs, rt := mcpSession(t, dir, nil, nil)
	if text, res := callText(t, cs, "strict", map[string]any{"message": "where?"}); res.IsError || !strings.Contains(text, "a question of strict/mcp") {
		t.Fatalf("strict: %q (error %v)", text, res.IsError)
	}
	text, res := callText(t, cs, "lead", map[string]any{"message": "go"})
	open, err := rt.Pending(t.Context(), ledger.Filter{Agent: "asker", Open: true})
	must(t, err)
	if len(open) != 1 {
		t.Fatalf("asker's open items: %v", open)
	}
	id := open[0].ID
	want := "The agent paused: it waits for a human.\n" +
		"- " + id + ": a question of asker/mcp: Which grammar? (required)\n" +
		"  answer it: ganglion answer " + dir + " " + id + " ANSWER\n" +
		"Once it is answered, call this tool again with the same instance (\"mcp\"): that call returns the agent's answer, and does not send its message.\n"
	if res.IsError || text != want {
		t.Fatalf("lead's paused result:\n%s\nwant:\n%s", text, want)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if strings.Contains(string(sc), "strict") || !strings.Contains(string(sc), `"id":"`+id+`"`) || !strings.Contains(string(sc), `"message_sent":true`) {
		t.Errorf("structured content: %s", sc)
	}
	// Answered elsewhere (the CLI, the API), the chain goes on; the next
	// call returns its answer, without sending its message.
	if _, err := rt.Answer(t.Context(), id, "LL(1)"); err != nil {
		t.Fatal(err)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "lead", Arguments: map[string]any{"message": "and?"}})
	must(t, err)
	if got := texts(res); res.IsError || len(got) != 2 || !strings.HasPrefix(got[0], "lead done: ") || !strings.Contains(got[1], "This call's message was not sent") {
		t.Errorf("lead after the answer: %q (error %v)", got, res.IsError)
	}
}

// texts returns the texts of a result's content.
func texts(res *mcp.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}

// elicitor is an MCP client's elicitation handler that answers with the
// next of its answers, and records what it was asked.
type elicitor struct {
	mu      sync.Mutex
	answers []*mcp.ElicitResult
	asked   []*mcp.ElicitParams
}

func (e *elicitor) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, req.Params)
	if len(e.answers) == 0 {
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	a := e.answers[0]
	if len(e.answers) > 1 {
		e.answers = e.answers[1:]
	}
	return a, nil
}

func accept(content map[string]any) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: content}
}

// TestMCPElicitation: a client that declares elicitation is asked for a
// question, an approval, a delegated agent's question and a file, and its
// answers resume the agent within the one call, whose result is the
// agent's answer; a decline of an optional question skips it; a decline
// of a required one, or a secret, returns the paused result. Clients on
// the protocol that asks in the call's result and on the older one that
// asks with a request are served alike.
func TestMCPElicitation(t *testing.T) {
	tests := []struct {
		name, agent string
		answers     []*mcp.ElicitResult
		// want is the result's text; asked the forms' messages, with
		// $DIR for the project.
		want  string
		asked []string
		// paused: the result is paused, and the item stays open.
		paused bool
	}{
		{"an optional question", "picker", []*mcp.ElicitResult{accept(map[string]any{"answer": "Subscription"})},
			`picker got: Answer to your question "What pricing model?": Subscription`,
			[]string{"picker/mcp asks: What pricing model? [Subscription | Freemium | Ad-based] (default: Freemium)"}, false},
		{"an optional question declined", "picker", []*mcp.ElicitResult{{Action: "decline"}},
			`picker got: Your question "What pricing model?" was skipped; go on with the default: Freemium`,
			[]string{"picker/mcp asks: What pricing model? [Subscription | Freemium | Ad-based] (default: Freemium)"}, false},
		{"an approval", "reader", []*mcp.ElicitResult{accept(map[string]any{"decision": "approve"})},
			"reader got: A human approved the call of read_file; it ran.",
			[]string{`reader/mcp wants to call read_file {"path":"a.txt"}; rules: reads need a human (ask); why: rule "reads need a human" decides ask`}, false},
		{"an approval rejected", "reader", []*mcp.ElicitResult{accept(map[string]any{"decision": "reject", "reason": "not now"})},
			"reader got: A human denied the call of read_file (not now); it did not run.",
			[]string{`reader/mcp wants to call read_file {"path":"a.txt"}; rules: reads need a human (ask); why: rule "reads need a human" decides ask`}, false},
		{"a question two delegations down", "lead", []*mcp.ElicitResult{accept(map[string]any{"answer": "LL(1)"})},
			"",
			[]string{"asker/mcp asks: Which grammar? (required)"}, false},
		{"a file asked again when refused", "filer", []*mcp.ElicitResult{accept(map[string]any{"value": "missing.txt"}), accept(map[string]any{"value": "a.txt"})},
			"filer got: The file data was provided at a.txt in the workspace.",
			[]string{"filer/mcp needs file data: the data to load", "That answer was refused: pending item \"$ID\": invalid action: value for \"data\" names a file that does not exist in the workspace\nfiler/mcp needs file data: the data to load"}, false},
		{"a required question declined", "strict", []*mcp.ElicitResult{{Action: "decline"}}, "",
			[]string{"strict/mcp asks: Which region? (required)"}, true},
		{"a required question cancelled", "strict", []*mcp.ElicitResult{{Action: "cancel"}}, "",
			[]string{"strict/mcp asks: Which region? (required)"}, true},
		{"a secret", "keeper", nil, "", nil, true},
		{"asked again and again", "looper", []*mcp.ElicitResult{accept(map[string]any{"answer": "yes"})}, "",
			slices.Repeat([]string{"looper/mcp asks: Once more? (required)"}, maxElicitations), true},
	}
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		for _, tt := range tests {
			t.Run(version+"/"+tt.name, func(t *testing.T) {
				dir := pauseProject(t)
				e := &elicitor{answers: tt.answers}
				cs, rt := mcpSession(t, dir, &mcp.ClientOptions{ElicitationHandler: e.handle}, &mcp.ClientSessionOptions{ProtocolVersion: version})
				text, res := callText(t, cs, tt.agent, map[string]any{"message": "go"})
				var asked []string
				for _, p := range e.asked {
					asked = append(asked, p.Message)
				}
				for i := range asked {
					asked[i] = itemIDRE.ReplaceAllString(asked[i], "$$ID")
				}
				if !slices.Equal(asked, tt.asked) {
					t.Errorf("asked %q\nwant %q", asked, tt.asked)
				}
				open, err := rt.Pending(t.Context(), ledger.Filter{Open: true})
				must(t, err)
				switch {
				case tt.paused:
					if res.IsError || !strings.HasPrefix(text, "The agent paused: it waits for a human.\n") || len(open) != 1 {
						t.Errorf("result %q (error %v), open items %d: want paused, with one open", text, res.IsError, len(open))
					}
				case tt.want == "":
					if res.IsError || !strings.HasPrefix(text, "lead done: ") || len(open) != 0 {
						t.Errorf("result %q (error %v), open items %d", text, res.IsError, len(open))
					}
				default:
					if res.IsError || text != tt.want || len(open) != 0 {
						t.Errorf("result %q (error %v), open items %d\nwant %q", text, res.IsError, len(open), tt.want)
					}
				}
			})
		}
	}
}

// TestMCPElicitationForms: what the client is asked for each kind: a
// question's options as an enum and its default, an approval's decision
// and reason, a permission as a boolean.
func TestMCPElicitationForms(t *testing.T) {
	dir := pauseProject(t)
	e := &elicitor{}
	cs, _ := mcpSession(t, dir, &mcp.ClientOptions{ElicitationHandler: e.handle}, nil)
	callText(t, cs, "picker", map[string]any{"message": "go"})
	callText(t, cs, "reader", map[string]any{"message": "go"})
	var got []string
	for _, p := range e.asked {
		b, _ := json.Marshal(p.RequestedSchema)
		got = append(got, string(b))
	}
	want := []string{
		`{"properties":{"answer":{"default":"Freemium","enum":["Subscription","Freemium","Ad-based"],"title":"Answer","type":"string"}},"type":"object"}`,
		`{"properties":{"decision":{"description":"approve runs the call; reject does not, and the agent reads your reason","enum":["approve","reject"],"title":"Decision","type":"string"},"reason":{"description":"why you reject the call, for the agent","title":"Reason","type":"string"}},"required":["decision"],"type":"object"}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("forms:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestMCPSecretNotElicited: a client that could be asked is never asked
// for a secret: the paused result says where to provide it, and the
// value provided there resumes the agent.
func TestMCPSecretNotElicited(t *testing.T) {
	dir := pauseProject(t)
	e := &elicitor{answers: []*mcp.ElicitResult{accept(map[string]any{"value": "sk-never"})}}
	cs, rt := mcpSession(t, dir, &mcp.ClientOptions{ElicitationHandler: e.handle}, nil)
	text, res := callText(t, cs, "keeper", map[string]any{"message": "go"})
	id := itemIDRE.FindString(text)
	want := "The agent paused: it waits for a human.\n" +
		"- " + id + ": a dependency of keeper/mcp: api_key OPENAI_API_KEY: Required for OpenAI API integration (required)\n" +
		"  provide it: ganglion provide " + dir + " " + id + " (reads the value from stdin), or: ganglion reject " + dir + " " + id + " --reason TEXT\n" +
		"  It is a secret, never asked for here: provide it in a terminal with the command above.\n" +
		"Once it is answered, call this tool again with the same instance (\"mcp\"): that call returns the agent's answer, and does not send its message.\n"
	if res.IsError || len(e.asked) != 0 || text != want {
		t.Fatalf("keeper: asked %d times, result:\n%s\nwant:\n%s", len(e.asked), text, want)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(sc), `"secret":true`) {
		t.Errorf("structured content: %s", sc)
	}
	if _, err := rt.Provide(t.Context(), id, "sk-proj-0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "keeper", Arguments: map[string]any{"message": "go on"}})
	must(t, err)
	if got := texts(res); res.IsError || len(got) != 2 || got[0] != "keeper got the key" || len(e.asked) != 0 {
		t.Errorf("keeper after the key: %q (error %v)", got, res.IsError)
	}
}

// TestMCPWithoutElicitation: a client that does not declare elicitation
// gets the paused result, and the item stays open.
func TestMCPWithoutElicitation(t *testing.T) {
	dir := pauseProject(t)
	cs, rt := mcpSession(t, dir, nil, nil)
	text, res := callText(t, cs, "picker", map[string]any{"message": "go"})
	id := itemIDRE.FindString(text)
	want := "The agent paused: it waits for a human.\n" +
		"- " + id + ": a question of picker/mcp: What pricing model? [Subscription | Freemium | Ad-based] (default: Freemium)\n" +
		"  answer it: ganglion answer " + dir + " " + id + " ANSWER, or: ganglion skip " + dir + " " + id + "\n" +
		"Once it is answered, call this tool again with the same instance (\"mcp\"): that call returns the agent's answer, and does not send its message.\n"
	if res.IsError || text != want {
		t.Fatalf("picker:\n%s\nwant:\n%s", text, want)
	}
	// Still paused: the next call says so again, and sends nothing.
	text, _ = callText(t, cs, "picker", map[string]any{"message": "again"})
	if !strings.Contains(text, "- "+id+": ") || !strings.Contains(text, "This call's message was not sent: the agent still works on the message that paused it.\n") {
		t.Errorf("picker, called again while paused:\n%s", text)
	}
	if open, _ := rt.Pending(t.Context(), ledger.Filter{Open: true}); len(open) != 1 {
		t.Errorf("open items: %v", open)
	}
}

// TestMCPRequestState: a call's request state is the client's to change,
// so the server checks it: one it did not give is refused, and an answer
// in it for an item the client was never asked for (a secret) is not
// taken.
func TestMCPRequestState(t *testing.T) {
	dir := pauseProject(t)
	cs, rt := mcpSession(t, dir, nil, nil)
	text, _ := callText(t, cs, "keeper", map[string]any{"message": "go"})
	id := itemIDRE.FindString(text)
	tests := []struct {
		name, state string
		want        string
		isError     bool
	}{
		{"not ours", "junk", `the call's "requestState" is not one this server gave: call without it`, true},
		{"a round out of bounds", `ganglion-elicit:{"round":99,"asked":["` + id + `"]}`, `the call's "requestState" is not one this server gave: call without it`, true},
		{"a secret in it", `ganglion-elicit:{"round":1,"asked":["` + id + `"]}`, "The agent paused: it waits for a human.\n- " + id + ": a dependency of keeper/mcp", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "keeper", Arguments: map[string]any{"message": "go"},
				RequestState: tt.state, InputResponses: mcp.InputResponseMap{id: accept(map[string]any{"value": "sk-stolen-0123456789"})}})
			must(t, err)
			if got := strings.Join(texts(res), ""); res.IsError != tt.isError || !strings.HasPrefix(got, tt.want) {
				t.Errorf("result %q (error %v)\nwant %q (error %v)", got, res.IsError, tt.want, tt.isError)
			}
			if it, err := rt.PendingItem(t.Context(), id); err != nil || !it.Open {
				t.Errorf("the secret's item: %+v, %v: want it open", it, err)
			}
		})
	}
}

package config_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/config"
)

// validateCases are files that decode but do not validate against known;
// each has a golden file validate_<name>.golden with the rendered errors.
var validateCases = []struct {
	name, src string
	// first is the header of the first error, checked exactly.
	first string
}{
	{"unknown_tool", `model:
  provider: scripted
  script: script.yaml
agents:
- name: assistant
  tools:
    - reed_file
`, `ganglion.yaml:7:7: agent "assistant": unknown tool "reed_file" (known: execute_command, list_files, read_file, write_file)`},
	{"extension_tool_listed", `model: {provider: scripted, script: script.yaml}
agents:
- name: assistant
  tools: [word_count]
  extensions: [{name: audit}]
`, `ganglion.yaml:4:11: agent "assistant": unknown tool "word_count" (known: execute_command, list_files, read_file, write_file)` + extToolHint},
	{"empty_tool_name", `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    tools: [read_file, ""]
`, `ganglion.yaml:4:24: agent "assistant": tools[1]: empty tool name`},
	{"duplicate_tool", `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    tools:
      - read_file
      - write_file
      - read_file
`, `ganglion.yaml:7:9: agent "assistant": duplicate tool "read_file" (first at line 5)`},
	{"agent_name_invalid", `model: {provider: scripted, script: s.yaml}
agents:
  - name: my assistant
`, `ganglion.yaml:3:11: invalid agent name "my assistant": use 1 to 64 letters, digits, '_', '.' or '-'`},
	{"agent_name_too_long", `model: {provider: scripted, script: s.yaml}
agents:
  - name: ` + strings.Repeat("a", 65) + `
`, `ganglion.yaml:3:11: invalid agent name "` + strings.Repeat("a", 65) + `": use 1 to 64 letters, digits, '_', '.' or '-'`},
	{"agent_name_missing", `model: {provider: scripted, script: s.yaml}
agents:
  - description: nameless
`, `ganglion.yaml:3:5: agents[0]: name is required`},
	{"agent_name_duplicate", `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
  - name: helper
  - name: assistant
`, `ganglion.yaml:5:11: duplicate agent name "assistant" (first at line 3)`},
	{"team_unknown_agent", `model: {provider: scripted, script: s.yaml}
agents:
  - name: lead
  - name: coder
teams:
  - name: dev
    agents: [coder, tester]
`, `ganglion.yaml:7:21: team "dev": unknown agent "tester" (agents: lead, coder)`},
	{"team_agent_twice", `model: {provider: scripted, script: s.yaml}
agents:
  - name: lead
  - name: coder
teams:
  - name: dev
    agents: [coder]
  - name: qa
    agents:
      - coder
`, `ganglion.yaml:10:9: team "qa": agent "coder" is in team "dev" already; an agent belongs to at most one team`},
	{"team_duplicate_and_empty", `model: {provider: scripted, script: s.yaml}
agents:
  - name: lead
teams:
  - name: dev
    agents: [lead]
  - name: dev
  - agents: [lead]
`, `ganglion.yaml:7:5: team "dev": no agents: list its members under "agents"`},
	{"model_tool_protocol_and_key", `model: {provider: scripted, script: s.yaml, tool_protocol: json, api_key_env: sk-proj-abc123, max_retries: 99}
agents:
  - name: lead
`, `ganglion.yaml:1:60: model: tool_protocol must be native or xml, got "json"`},
	{"unknown_extension", `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    extensions:
      - name: audti
`, `ganglion.yaml:5:15: agent "assistant": unknown extension "audti" (known: approval, audit)`},
	{"extension_without_name_or_wasm", `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    extensions:
      - on_error: fail_open
`, `ganglion.yaml:5:9: agent "assistant": extensions[0]: set "name" (a native extension) or "wasm" (a WebAssembly module)`},
	{"extension_on_error", `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    extensions:
      - name: audit
        on_error: ignore
`, `ganglion.yaml:6:19: agent "assistant": extension "audit": on_error must be fail_closed or fail_open, got "ignore"`},
	{"extension_limits_native", `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    extensions:
      - name: audit
        limits: {timeout: 1s}
`, `ganglion.yaml:6:18: agent "assistant": extension "audit": limits: only a WebAssembly extension (wasm:) has limits`},
	{"extension_limits_bad", `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    extensions:
      - wasm: guard.wasm
        limits: {timeout: soon, memory: lots, max_depth: -1}
`, `ganglion.yaml:6:27: agent "assistant": extension "guard": limits: timeout must be a positive duration such as 1s or 250ms, got "soon"`},
	{"extension_secret_name", `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    extensions:
      - name: audit
        secrets: [OPENAI_API_KEY, 2FA-CODE]
`, `ganglion.yaml:6:35: agent "assistant": extension "audit": secrets: "2FA-CODE" is not an environment variable name (1 to 64 letters, digits and _, not starting with a digit)`},
	{"extension_secret_name_too_long", `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    extensions:
      - name: audit
        secrets: [KKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKK]
`, `ganglion.yaml:6:19: agent "assistant": extension "audit": secrets: "KKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKK" is not an environment variable name (1 to 64 letters, digits and _, not starting with a digit)`},
	{"extension_pending_native", `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    extensions:
      - name: audit
        pending: [ask]
`, `ganglion.yaml:6:18: agent "assistant": extension "audit": pending: only a WebAssembly extension (wasm:) is granted pending kinds; a native one registers its own`},
	{"extension_pending_kind", `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    extensions:
      - wasm: guard.wasm
        pending: [ask, Ask Me]
`, `ganglion.yaml:6:24: agent "assistant": extension "guard": pending: "Ask Me" is not a pending kind (1 to 64 lower-case letters, digits, _ or -)`},
	{"extension_duplicate_name", `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    extensions:
      - name: audit
      - name: audit
        priority: 1
`, `ganglion.yaml:6:15: agent "assistant": duplicate extension "audit" (first at line 5); give one of them another name`},
	{"extension_duplicate_wasm_name", `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    extensions:
      - wasm: a/guard.wasm
      - wasm: b/guard.wasm
`, `ganglion.yaml:6:15: agent "assistant": duplicate extension "guard" (first at line 5); give one of them another name`},
	{"max_steps_negative", `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    max_steps: -1
`, `ganglion.yaml:4:16: agent "assistant": max_steps must be between 1 and 1000, got -1`},
	{"max_steps_too_many", `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    max_steps: 1001
`, `ganglion.yaml:4:16: agent "assistant": max_steps must be between 1 and 1000, got 1001`},
	{"no_model", `agents:
  - name: assistant
    tools: [read_file]
`, `ganglion.yaml:2:5: agent "assistant": no model: set "model" on the agent or at the top level`},
	{"unknown_provider", `model:
  provider: anthropic
agents:
  - name: assistant
`, `ganglion.yaml:2:13: model: unknown provider "anthropic" (known: openai, scripted)`},
	{"unknown_agent_provider", `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    model:
      provider: anthropic
      name: claude
`, `ganglion.yaml:5:17: agent "assistant": model: unknown provider "anthropic" (known: openai, scripted)`},
	{"missing_provider", `model:
  name: gpt-4o
agents:
  - name: assistant
`, `ganglion.yaml:2:3: model: provider is required (known: openai, scripted)`},
	{"scripted_without_script", `agents:
  - name: assistant
    model:
      provider: scripted
`, `ganglion.yaml:4:17: agent "assistant": model: the scripted provider needs "script", the file of its responses`},
	{"negative_tokens", `model:
  provider: openai
  context_window: -1
  max_output_tokens: -2
agents:
  - name: assistant
`, `ganglion.yaml:3:19: model: context_window must not be negative, got -1`},
	{"agent_calls_depth", `model: {provider: scripted, script: s.yaml}
agent_calls:
  max_depth: 40
  timeout: forever
agents:
  - name: assistant
`, `ganglion.yaml:3:14: agent_calls: max_depth must be between 1 and 32 (0 or absent: the default), got 40`},
	{"agent_calls_timeout", `model: {provider: scripted, script: s.yaml}
agent_calls: {timeout: 2h}
agents:
  - name: assistant
`, `ganglion.yaml:2:24: agent_calls: timeout must be a positive duration of at most 1h, such as 15s or 2m, got "2h"`},
	{"store_memtable_small", `model: {provider: scripted, script: s.yaml}
store: {memtable_size: 4MiB}
agents:
  - name: assistant
`, `ganglion.yaml:2:24: store: memtable_size must be at least 8.0 MiB, got "4MiB"`},
	{"store_block_cache_not_a_size", `model: {provider: scripted, script: s.yaml}
store: {block_cache_size: lots}
agents:
  - name: assistant
`, `ganglion.yaml:2:27: store: block_cache_size must be a size such as 64MiB (at most 4GiB), got "lots"`},
	{"store_with_cluster", `model: {provider: scripted, script: s.yaml}
cluster: {url: "nats://127.0.0.1:4222"}
store: {memtable_size: 16MiB}
agents:
  - name: assistant
`, `ganglion.yaml:3:9: store: sizes the badger store of the data directory, which a cluster does not use (its data is in JetStream)`},
	{"cluster_url_missing", `model: {provider: scripted, script: s.yaml}
cluster: {name: prod}
agents:
  - name: assistant
`, `ganglion.yaml:2:11: cluster: url is required: the NATS server to connect to (nats://host:4222)`},
	{"cluster_url_not_nats", `model: {provider: scripted, script: s.yaml}
cluster: {url: "http://ops:hunter2@nats.internal:4222"}
agents:
  - name: assistant
`, `ganglion.yaml:2:16: cluster: url 1 (http://ops:xxxxx@nats.internal:4222) is not a NATS URL: want nats://host:port (or tls://, ws://, wss://)`},
	{"cluster_name", `model: {provider: scripted, script: s.yaml}
cluster: {url: "nats://127.0.0.1:4222", name: "prod.eu"}
agents:
  - name: assistant
`, `ganglion.yaml:2:47: cluster: name "prod.eu": use 1 to 64 letters, digits, '-' or '_' (it names buckets and subjects)`},
	{"cluster_replicas", `model: {provider: scripted, script: s.yaml}
cluster: {url: "nats://127.0.0.1:4222", replicas: 7}
agents:
  - name: assistant
`, `ganglion.yaml:2:51: cluster: replicas must be between 1 and 5 (0 or absent: 1), got 7`},
	{"cluster_lease_ttl", `model: {provider: scripted, script: s.yaml}
cluster: {url: "nats://127.0.0.1:4222", lease_ttl: 1500ms}
agents:
  - name: assistant
`, `ganglion.yaml:2:52: cluster: lease_ttl must be whole seconds from 1s to 5m0s, got 1.5s`},
	{"cluster_request_timeout", `model: {provider: scripted, script: s.yaml}
cluster: {url: "nats://127.0.0.1:4222", request_timeout: 500ms}
agents:
  - name: assistant
`, `ganglion.yaml:2:58: cluster: request_timeout must be from 1s to 5m0s, got 500ms`},
	{"cluster_request_timeout_not_duration", `model: {provider: scripted, script: s.yaml}
cluster: {url: "nats://127.0.0.1:4222", request_timeout: soon}
agents:
  - name: assistant
`, `ganglion.yaml:2:58: cluster: request_timeout "soon" is not a duration ("10s", "1m")`},
	{"cluster_secret_ref", `model: {provider: scripted, script: s.yaml}
cluster: {url: "nats://ops:${secret:NATS}@127.0.0.1:4222"}
agents:
  - name: assistant
`, `ganglion.yaml:2:16: cluster: url: ${secret:NATS} is a provided secret, which an instance has, not the runtime; use ${VAR} from the environment`},
	{"webhooks", `model: {provider: scripted, script: s.yaml}
webhooks:
  - url: ftp://hooks.example.com/x
    secret_env: 1SECRET
    events: [pending.created, turn.started]
  - secret_env: HOOK_SECRET
  - url: https://hooks.example.com/ok
agents:
  - name: assistant
`, `ganglion.yaml:3:10: webhooks[0]: url "ftp://hooks.example.com/x": want an http or https URL with a host, as in https://hooks.example.com/ganglion`},
	{"task_budget_negative", `model: {provider: scripted, script: s.yaml}
task_budget: {turns: -1}
agents:
  - name: lead
    task_budget:
      delegations: -5
      tokens: -10
`, `ganglion.yaml:2:22: task_budget: turns must be positive (0 or absent: the default), got -1`},
	{"many", `model:
  provider: scripted
agents:
  - name: assistant
    tools: [read_file, reed_file, read_file]
    max_steps: 5000
    extensions:
      - name: audit
        on_error: never
      - name: sentry
  - name: assistant
    model:
      provider: nope
  - name: bad name!
    tools: [list_files]
`, `ganglion.yaml:2:13: model: the scripted provider needs "script", the file of its responses`},
}

func TestValidate(t *testing.T) {
	for _, tt := range validateCases {
		t.Run(tt.name, func(t *testing.T) {
			f := mustParse(t, tt.src)
			err := f.Validate(known)
			list := errorList(t, err)
			if got := firstLines(list)[0]; got != tt.first {
				t.Errorf("first error:\ngot  %s\nwant %s", got, tt.first)
			}
			golden(t, "validate_"+tt.name, err.Error())
		})
	}
}

func TestValidateManyInOrder(t *testing.T) {
	var src string
	for _, tt := range validateCases {
		if tt.name == "many" {
			src = tt.src
		}
	}
	err := mustParse(t, src).Validate(known)
	got := firstLines(errorList(t, err))
	want := []string{
		`ganglion.yaml:2:13: model: the scripted provider needs "script", the file of its responses`,
		`ganglion.yaml:5:24: agent "assistant": unknown tool "reed_file" (known: execute_command, list_files, read_file, write_file)` + extToolHint,
		`ganglion.yaml:5:35: agent "assistant": duplicate tool "read_file" (first at line 5)`,
		`ganglion.yaml:6:16: agent "assistant": max_steps must be between 1 and 1000, got 5000`,
		`ganglion.yaml:9:19: agent "assistant": extension "audit": on_error must be fail_closed or fail_open, got "never"`,
		`ganglion.yaml:10:15: agent "assistant": unknown extension "sentry" (known: approval, audit)`,
		`ganglion.yaml:11:11: duplicate agent name "assistant" (first at line 4)`,
		`ganglion.yaml:13:17: agent "assistant": model: unknown provider "nope" (known: openai, scripted)`,
		`ganglion.yaml:14:11: invalid agent name "bad name!": use 1 to 64 letters, digits, '_', '.' or '-'`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestValidateValid(t *testing.T) {
	f := mustParse(t, `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    tools: [read_file, write_file]
    max_steps: 1000
    extensions:
      - name: audit
        on_error: fail_open
      - wasm: guard.wasm
      - name: guard2
        wasm: guard.wasm
  - name: helper-2.v1_x
    model: {provider: openai, name: gpt-4o}
`)
	if err := f.Validate(known); err != nil {
		t.Fatal(err)
	}
}

func TestValidateKnown(t *testing.T) {
	f := mustParse(t, `model: {provider: mystery}
agents:
  - name: assistant
    tools: [anything]
    extensions: [{name: whatever}]
`)
	tests := []struct {
		name  string
		known config.Known
		want  []string
	}{
		{name: "nothing known checks nothing", known: config.Known{}},
		{
			name: "has funcs without names",
			known: config.Known{
				Tool:      func(string) bool { return false },
				Extension: func(string) bool { return false },
				Provider:  func(string) bool { return false },
			},
			want: []string{
				`ganglion.yaml:1:19: model: unknown provider "mystery"`,
				`ganglion.yaml:4:13: agent "assistant": unknown tool "anything"` + extToolHint,
				`ganglion.yaml:5:25: agent "assistant": unknown extension "whatever"`,
			},
		},
		{
			name: "has func wins over names",
			known: config.Known{
				Tool:      func(name string) bool { return name == "anything" },
				ToolNames: func() []string { return []string{"read_file"} },
			},
		},
		{
			name: "empty names",
			known: config.Known{
				ToolNames: func() []string { return nil },
			},
			want: []string{`ganglion.yaml:4:13: agent "assistant": unknown tool "anything" (none are registered)` + extToolHint},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := f.Validate(tt.known)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if got := firstLines(errorList(t, err)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestValidateBuiltInCode(t *testing.T) {
	m := &config.Model{Provider: "scripted"}
	f := &config.File{
		Path:  "app.yaml",
		Model: m,
		Agents: []config.Agent{
			{Name: "a", Tools: []string{"nope"}},
			{Name: "b", Extensions: []config.Extension{{}}},
		},
	}
	err := f.Validate(known)
	var list config.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("got %T, want ErrorList", err)
	}
	want := []struct{ path, text string }{
		{"$.model.provider", `app.yaml: model: the scripted provider needs "script", the file of its responses`},
		{"$.agents[0].tools[0]", `app.yaml: agent "a": unknown tool "nope" (known: execute_command, list_files, read_file, write_file)`},
		{"$.agents[1].extensions[0]", `app.yaml: agent "b": extensions[0]: set "name" (a native extension) or "wasm" (a WebAssembly module)`},
	}
	if len(list) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(list), len(want), err)
	}
	for i, w := range want {
		if list[i].Path != w.path || list[i].Error() != w.text || list[i].Line != 0 {
			t.Errorf("error %d = %q at %q line %d, want %q at %q", i, list[i].Error(), list[i].Path, list[i].Line, w.text, w.path)
		}
	}
}

func TestErrorFields(t *testing.T) {
	var src string
	for _, tt := range validateCases {
		if tt.name == "unknown_tool" {
			src = tt.src
		}
	}
	err := mustParse(t, src).Validate(known)
	var e *config.Error
	if !errors.As(err, &e) {
		t.Fatalf("errors.As(%T, *config.Error) failed", err)
	}
	want := config.Error{
		File:   "ganglion.yaml",
		Line:   7,
		Column: 7,
		Path:   "$.agents[0].tools[0]",
		Msg:    `agent "assistant": unknown tool "reed_file" (known: execute_command, list_files, read_file, write_file)`,
		Snippet: `   4 | agents:
   5 | - name: assistant
   6 |   tools:
>  7 |     - reed_file
             ^`,
	}
	if e.File != want.File || e.Line != want.Line || e.Column != want.Column || e.Path != want.Path || e.Msg != want.Msg || e.Snippet != want.Snippet {
		t.Errorf("got  %#v\nwant %#v", *e, want)
	}
	if e.Unwrap() != nil {
		t.Errorf("Unwrap() = %v, want nil for a semantic error", e.Unwrap())
	}
}

// extToolHint ends an unknown-tool error of an agent with extensions.
const extToolHint = "; an extension's own tools need no listing: the agent is offered them with the extension"

func TestValidateMCPServers(t *testing.T) {
	tests := []struct {
		name, servers, agent, want string
	}{
		{"ok", `[{name: files, command: [fs-server, /tmp], env: {API_KEY: "${FS_KEY}", MODE: ro}}, {name: web, url: "https://x.example/mcp", headers: {Authorization: "Bearer ${WEB_TOKEN}"}, start: eager, timeout: 10s}]`,
			`[{server: files}, {server: web, tools: [search]}]`, ""},
		{"provided secrets", `[{name: gh, command: [gh-mcp], env: {GH_TOKEN: "${secret:GH_TOKEN}"}}, {name: web, url: "https://x.example/mcp", headers: {Authorization: "Bearer ${secret:WEB_TOKEN}"}}]`,
			`[{server: gh}, {server: web}]`, ""},
		{"no name", `[{command: [x]}]`, `[]`, `mcp_servers[0]: name is required`},
		{"bad name", `[{name: "a__b", command: [x]}]`, `[]`, `mcp_servers[0]: name "a__b": use 1 to 32 letters, digits, '_' or '-', without "__" (it prefixes its tools' names)`},
		{"duplicate", `[{name: a, command: [x]}, {name: a, command: [y]}]`, `[]`, `duplicate MCP server name "a" (first at line 2)`},
		{"neither", `[{name: a}]`, `[]`, `MCP server "a": a command (a stdio server) or a url (a streamable-HTTP server) is required`},
		{"both", `[{name: a, command: [x], url: "http://h/"}]`, `[]`, `MCP server "a": a command or a url, not both`},
		{"bad url", `[{name: a, url: "ftp://h/"}]`, `[]`, `MCP server "a": url "ftp://h/": want an http or https URL with a host`},
		{"secret in clear", `[{name: a, command: [x], env: {GITHUB_TOKEN: ghp_abc}}]`, `[]`,
			`MCP server "a": env GITHUB_TOKEN: a secret is never written here: take it from the environment, as GITHUB_TOKEN: ${GITHUB_TOKEN}, or from a secret provided to the instance, as ${secret:GITHUB_TOKEN}`},
		{"header in clear", `[{name: a, url: "https://h/", headers: {Authorization: "Bearer abc"}}]`, `[]`,
			`MCP server "a": headers Authorization: a secret is never written here: take it from the environment, as Authorization: ${AUTHORIZATION}, or from a secret provided to the instance, as ${secret:AUTHORIZATION}`},
		{"bad ref", `[{name: a, command: [x], env: {K: "${1X}"}}]`, `[]`, `MCP server "a": env K: ${1X} is not an environment variable's name`},
		{"bad secret ref", `[{name: a, url: "https://h/", headers: {X-Api-Key: "${secret:api-key}"}}]`, `[]`,
			`MCP server "a": headers X-Api-Key: ${secret:api-key} is not a provided secret's name (want [A-Za-z_][A-Za-z0-9_]{0,63})`},
		{"eager with a provided secret", `[{name: a, command: [x], start: eager, env: {TOKEN: "${secret:GH_TOKEN}"}}]`, `[]`,
			`MCP server "a": start eager: the server takes the provided secret GH_TOKEN, so it starts for each instance at its first step, never before`},
		{"bad start", `[{name: a, command: [x], start: soon}]`, `[]`, `MCP server "a": start "soon": want lazy (the default) or eager`},
		{"bad timeout", `[{name: a, command: [x], timeout: forever}]`, `[]`, `MCP server "a": timeout "forever": want a duration from 1ms to 1h, as in "30s"`},
		{"unknown server", `[{name: a, command: [x]}]`, `[{server: b}]`, `agent "assistant": unknown MCP server "b" (mcp_servers: a)`},
		{"twice", `[{name: a, command: [x]}]`, `[{server: a}, {server: a}]`, `agent "assistant": MCP server "a" is listed twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "model: {provider: scripted, script: s.yaml}\nmcp_servers: " + tt.servers + "\nagents:\n  - name: assistant\n    mcp_servers: " + tt.agent + "\n"
			f, err := config.Parse("ganglion.yaml", []byte(src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			err = f.Validate(known)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate: %v\nwant %q", err, tt.want)
			}
		})
	}
}

// TestValidateNotLinked: a provider the program could import but did not
// is reported with the import to add; a name no package provides stays
// unknown; a telemetry block in a program without the export names its
// import too.
func TestValidateNotLinked(t *testing.T) {
	const openai = "github.com/ganglion-dev/ganglion/runtime/model/openai"
	const export = "github.com/ganglion-dev/ganglion/runtime/otlp"
	linkable := func(name string) string {
		return map[string]string{"openai": openai, "anthropic": "github.com/ganglion-dev/ganglion/runtime/model/anthropic"}[name]
	}
	src := `model: {provider: scripted, script: s.yaml}
telemetry:
  service_name: svc
agents:
  - name: x
    model:
      provider: openai
  - name: y
    model: {provider: anthropic}
  - name: z
    model: {provider: mystery}
`
	f := mustParse(t, src)
	tests := []struct {
		name  string
		known config.Known
		want  []string
	}{
		{
			name:  "linked",
			known: config.Known{ProviderNames: func() []string { return []string{"anthropic", "mystery", "openai", "scripted"} }, ProviderImport: linkable},
		},
		{
			name: "not linked",
			known: config.Known{ProviderNames: func() []string { return []string{"scripted"} }, ProviderImport: linkable, Import: func(key string) string {
				if key == "telemetry" {
					return export
				}
				return ""
			}},
			want: []string{
				`ganglion.yaml:3:3: telemetry: OpenTelemetry export is not linked into this program; add: import _ "` + export + `"`,
				`ganglion.yaml:7:17: agent "x": model: provider "openai" is not linked into this program; add: import _ "` + openai + `"`,
				`ganglion.yaml:9:23: agent "y": model: provider "anthropic" is not linked into this program; add: import _ "github.com/ganglion-dev/ganglion/runtime/model/anthropic"`,
				`ganglion.yaml:11:23: agent "z": model: unknown provider "mystery" (known: scripted)`,
			},
		},
		{
			name:  "no import hints",
			known: config.Known{ProviderNames: func() []string { return []string{"scripted"} }},
			want: []string{
				`ganglion.yaml:7:17: agent "x": model: unknown provider "openai" (known: scripted)`,
				`ganglion.yaml:9:23: agent "y": model: unknown provider "anthropic" (known: scripted)`,
				`ganglion.yaml:11:23: agent "z": model: unknown provider "mystery" (known: scripted)`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := f.Validate(tt.known)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if got := firstLines(errorList(t, err)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

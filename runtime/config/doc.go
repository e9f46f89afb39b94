// Package config reads ganglion.yaml, the file that defines an app's agents,
// their models, tools and extensions, and checks it, reporting every problem
// with its file, line and column.
//
// The runtime and the CLI use it in three steps:
//
//  1. [Load] (or [Parse] for bytes) decodes the file strictly into a [File],
//     resolves relative paths and applies defaults;
//  2. [File.Validate] checks what decoding cannot: names, limits, required
//     settings, duplicates, and the tools, extensions and model providers
//     the runtime knows, given as [Known];
//  3. each extension decodes its own settings with [Extension.Decode].
//
// # Example
//
//	# ganglion.yaml
//	workspace: ./workspace       # default: "workspace" next to this file
//	data: ./.ganglion/data       # default: .ganglion/data next to this file
//	store:                       # badger's sizes (see Store)
//	  memtable_size: 64MiB       # 8MiB; bounds a commit to about 15 % of it
//	  block_cache_size: 64MiB    # 1MiB
//	model:                       # the default model of every agent
//	  provider: scripted
//	  script: replies.yaml
//	agents:
//	  - name: assistant
//	    description: Answers questions about the workspace.
//	    system: |
//	      You are a careful assistant.
//	    tools: [read_file, list_files]
//	    max_steps: 40
//	    extensions:
//	      - name: audit            # a native extension
//	        config:
//	          limit: 3
//	      - wasm: ext/guard.wasm   # a WebAssembly module, named "guard"
//	        on_error: fail_open
//	  - name: reviewer
//	    model:                     # replaces the default model as a whole
//	      provider: openai
//	      name: gpt-4o
//	      base_url: https://api.openai.com/v1
//	      api_key_env: OPENAI_API_KEY
//
// # Reference
//
// Top level ([File]):
//
//	workspace   string   directory the built-in tools are confined to.
//	                     Default: "workspace" next to the file.
//	data        string   directory of the store. Default: empty, meaning
//	                     the caller's default.
//	model       Model    default model of every agent that has none.
//	agents      [Agent]  the agents, at least one; the first is the CLI's
//	                     default.
//	teams       [Team]   groups of agents that delegate among themselves.
//	outputs     path     where long delegation reports are saved; default
//	                     "outputs" next to the file.
//	agent_calls AgentCalls  bounds on calls between agents.
//	task_budget Budget   the budget of every agent's task trees, for the
//	                     fields an agent's own task_budget leaves 0.
//	webhooks    [Webhook]  URLs that ganglion serve notifies.
//
// Webhook ([Webhook]):
//
//	url         string    http or https; required.
//	secret_env  string    the environment variable holding the signing
//	                      secret; required (never the secret itself).
//	events      [string]  pending.created, pending.resolved,
//	                      task.answered, turn.failed; default: all.
//
// AgentCalls ([AgentCalls]):
//
//	max_depth  int     the longest chain of agents waiting on one another
//	                   (ctx.agents requests, delegation chains), 1 to 32.
//	                   Default 5.
//	timeout    string  default timeout of ctx.agents.request, a Go
//	                   duration of at most 1h. Default 15s.
//
// Budget ([Budget]): what a task tree (a request an agent delegated from,
// with every task under it) may spend; 0 or absent takes the default.
//
//	delegations  int  call_agent calls that made a task. Default 100.
//	turns        int  turns of the tree's tasks. Default 500.
//	tokens       int  model tokens, input and output. Default 10000000.
//
// Model ([Model]):
//
//	provider           string  required; "scripted" (offline, replays
//	                           script), "openai" (any OpenAI-compatible
//	                           server), "anthropic", or a provider the
//	                           runtime registers.
//	name               string  the provider's model name.
//	script             path    the scripted model's responses; required by
//	                           the scripted provider.
//	base_url           string  API endpoint of a networked provider.
//	api_key_env        string  environment variable holding the API key;
//	                           the key itself never goes in the file (a
//	                           value that is not a variable's name is
//	                           refused and masked in error excerpts).
//	context_window     int     context size in tokens; 0: provider default.
//	max_output_tokens  int     bound on an answer; 0: provider default.
//	tool_protocol      string  "native" (default) or "xml": tool calls
//	                           written as XML in the text, for models
//	                           without tool calling.
//	max_retries        int     retries of a call that failed with a rate
//	                           limit or a server or network error; absent:
//	                           5, 0: none, at most 20.
//	thinking           int     Anthropic's extended-thinking budget in
//	                           tokens; 0: off.
//
// Team ([Team]):
//
//	name         string    required, [a-zA-Z0-9_.-]{1,64}, unique.
//	description  string    what the team is for.
//	agents       [string]  its agents, at least one; an agent is in at
//	                       most one team.
//
// Agent ([Agent]):
//
//	name         string       required, [a-zA-Z0-9_.-]{1,64}, unique.
//	description  string       what the agent is for.
//	system       string       the system prompt.
//	model        Model        overrides the top-level model as a whole; an
//	                          agent without one uses the top-level model, and
//	                          one of the two is required.
//	tools        [string]     tools the agent may call, each once.
//	extensions   [Extension]  extensions, in load and nesting order.
//	max_steps    int          steps per turn, 1 to 1000. Default 25.
//	task_budget  Budget       the budget of the task trees the agent
//	                          starts, field by field over the top-level one.
//
// Extension ([Extension]):
//
//	name      string  a native extension's registered name, or the name of
//	                  a WASM module. Unique within the agent.
//	wasm      path    a WebAssembly module; its name defaults to the file
//	                  name without ".wasm". Name or wasm is required.
//	on_error  string  fail_closed (default): an error fails the turn;
//	                  fail_open: the extension is skipped.
//	priority  int     orders middleware; lower runs outer. Default 0.
//	config    any     the extension's own settings; see [Extension.Decode].
//
// # Paths
//
// script, wasm, workspace and data may be relative: [Load] resolves them
// against the directory of the config file (made absolute), [Parse] against
// the directory of the name it is given, as written. Absolute paths are kept.
// No "~" or environment variables are expanded.
//
// # Typing
//
// Decoding is strict. A key the reference does not list is an error, and so
// is a value of the wrong type: a string field wants a string (quote
// `name: "1.10"`, or it would be a number), an integer field an integer
// (`max_steps: "25"` and `max_steps: 2.5` are errors), a list a list. null
// (or an absent key) leaves a field at its default. Anchors, aliases and
// merge keys (<<) work as in YAML. A file holds one YAML document.
//
// # Errors
//
// Problems in a file are reported as an [ErrorList] of [*Error]s, sorted by
// position. Each renders as "file:line:column: message" followed by the
// lines around it and a caret under the column:
//
//	ganglion.yaml:7:7: agent "assistant": unknown tool "reed_file" (known: execute_command, list_files, read_file, write_file)
//	   4 | agents:
//	   5 | - name: assistant
//	   6 |   tools:
//	>  7 |     - reed_file
//	             ^
//
// Decoding stops at syntax errors, but otherwise collects every type error
// and unknown key; Validate collects every problem it finds.
//
// # Concurrency
//
// Load and Parse are safe for concurrent use. A [File] is
// plain data: many goroutines may read it, Validate it and Decode its
// extensions' configs at once, as long as none changes it.
package config

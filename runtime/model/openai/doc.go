// Package openai is a [model.Provider] for OpenAI's chat completions API
// and the servers that speak it: OpenAI itself, vLLM, Ollama, LM Studio,
// llama.cpp, OpenRouter, DeepSeek... It is built on
// github.com/openai/openai-go/v3 and streams every call (POST
// {BaseURL}/chat/completions with "stream": true), turning the server's
// events into [model.Chunk]s.
//
// Importing the package registers it as the provider "openai"
// ([model.Register]); a program that does not import it links none of its
// SDK. Without base_url and api_key_env, the registered provider reads the
// key from [DefaultAPIKeyEnv].
//
// Create one with [New]; it is safe for concurrent use. It never retries:
// wrap it in [model.WithRetry], which retries the failures it classifies as
// [model.ErrorRateLimit] and [model.ErrorTransient]. The SDK's own retries
// are off, and the SDK reads nothing from the environment (no
// OPENAI_API_KEY, no OPENAI_BASE_URL): the [Config] says everything. An
// empty Config.BaseURL means OpenAI's, https://api.openai.com/v1.
//
// # API key
//
// The key is resolved for each request: the environment variable
// Config.APIKeyEnv, else Request.Secret of that name. Without either,
// Stream fails with a [model.ErrorAuth] error that names the variable. An
// empty APIKeyEnv means the server needs no key (a local Ollama or vLLM):
// no Authorization header is sent. The key travels in the Authorization
// header only. It is never part of an error, a chunk or a log: errors are
// built from the server's error message, with the key, and its common
// encodings (base64, hex, percent and JSON escapes), replaced by
// "[secret NAME]", NAME being Config.APIKeyEnv, should a server echo it
// (the masking is internal/secret's Redactor, the runtime's one redactor).
// They do not wrap the SDK's errors (an *openai.Error holds the request
// and its headers), nor a network error whose text shows the key.
//
// # Request
//
// Request.System is the first message, of role system. The history maps
// message by message, in order:
//
//   - a user message is a user message with the text as content;
//   - an assistant message is an assistant message with its text (left
//     out when it is empty and the message calls tools) and its
//     tool_calls (id, type "function", function name and arguments, the
//     arguments sent verbatim as the JSON string servers expect; empty
//     arguments are sent as "{}"). Its reasoning is not sent back: the
//     API has no field for it, and DeepSeek refuses reasoning_content in
//     requests;
//   - a tool message is a tool message (tool_call_id, content);
//   - a system message inside the history (extensions inject those) is a
//     system message in the same place: chat completions allows system
//     messages anywhere, and a reminder keeps its position next to what it
//     is about.
//
// Tools are function tools. Their Parameters schema is sent as it is (its
// top-level keys in sorted order, everything below byte for byte, so the
// prompt prefix is stable for caching); an empty schema is
// {"type":"object","properties":{}}, and a schema that is not a JSON object
// fails the call as a [model.ErrorInvalidRequest].
//
// The model is Request.Model, else Config.Model. The bound on the answer
// is Request.MaxOutputTokens, else Config.MaxOutputTokens, else none (the
// server's default). It is sent as max_completion_tokens to OpenAI
// (api.openai.com, the default BaseURL), which refuses max_tokens for its
// reasoning models, and as max_tokens to any other server: max_tokens is
// what every compatible server understands (Ollama and LM Studio know only
// it and ignore max_completion_tokens without a word, so the bound would
// silently be lost), and sending both makes OpenAI's reasoning models
// refuse the request. Config.MaxTokensField overrides the choice (vLLM,
// for one, knows max_completion_tokens). stream_options include_usage is
// always set, so that the stream ends with the usage.
//
// # Chunks
//
//   - delta.content: [model.KindText]; delta.refusal (OpenAI's refusal
//     text) too: it is the model's answer;
//   - delta.reasoning_content (DeepSeek, vLLM, llama.cpp) or, when a delta
//     has none, delta.reasoning (OpenRouter, Ollama, newer vLLM):
//     [model.KindReasoning]. Only one of the two is read from a delta, as
//     some servers send the same text in both;
//   - delta.tool_calls: assembled by index, so several calls may
//     interleave. A call's first delta carries its id and name: it opens
//     the call with a [model.KindToolCallStart]; every piece of arguments
//     is a [model.KindToolCallDelta] with the call's ID, verbatim (a piece
//     may end inside a string, an escape or a UTF-8 character: the pieces
//     concatenate to the exact bytes the model wrote). A call whose first
//     delta has no id gets one: "<TurnID>-call-<Step>-<n>" (n counting the
//     response's calls from 1), or a random "call_…" when the request has
//     no TurnID. A call is opened only once its name is known; arguments
//     that come before it are held until then. Every open call gets its
//     [model.KindToolCallEnd], in the order the calls opened, when the
//     choice finishes (finish_reason) or the stream ends;
//   - usage: one [model.KindUsage] chunk, after everything else, when the
//     stream ends (some servers repeat a running usage in every event; the
//     last one counts). OpenAI's prompt_tokens includes the tokens read
//     from its prompt cache (prompt_tokens_details.cached_tokens, or
//     DeepSeek's prompt_cache_hit_tokens); as in the runtime's and
//     Anthropic's accounting, InputTokens is prompt_tokens minus those and
//     CacheReadTokens is those, so that their sum is the prompt.
//     OutputTokens is completion_tokens (reasoning included).
//
// Only the first choice (index 0) is read: the provider never asks for
// more. The finish reason itself ("length", "content_filter") is not
// streamed: [model.Chunk] has no kind for it.
//
// # Errors
//
// An HTTP error when the stream opens is returned by Stream as a
// [*model.Error]: its kind comes from [model.StatusKind], except that an
// invalid request (400, 413, 422...) whose code or message says the
// context is too long ("context_length_exceeded", "This model's maximum
// context length is 8192 tokens") is [model.ErrorContextWindow]. RetryAfter
// comes from the retry-after-ms and Retry-After headers. Message is the
// server's error message, read from OpenAI's {"error":{"message":...}} and
// from the shapes other servers use ({"error":"..."}, vLLM's top-level
// {"object":"error","message":...}, {"detail":...}), else the status text.
// A network failure (refused or reset connection, a timeout that is not
// the context's) is [model.ErrorTransient].
//
// A failure after the stream opened ends it with a [model.KindError] chunk
// holding a [*model.Error]: an event that carries an error object (or an
// SSE event of type error), classified by its content (an HTTP status in
// its code or status, else words of its code and type: rate limit, server
// error or overload, authentication, invalid request, and the context
// window phrases of its message; [model.ErrorOther] when nothing says),
// a cut connection or a stream that ends (without [DONE]) before the
// choice finished (transient), or an event that is not valid JSON
// ([model.ErrorOther]). A usage seen before the failure comes first. When
// the failure comes before any content, the error chunk is the first
// chunk, so that [model.WithRetry] retries it. A connection cut after the
// choice finished ends the stream normally: the answer is whole, only the
// usage may be missing.
//
// Cancelling the context ends the call with the context's error: Stream
// returns it, or Recv does, so that errors.Is(err, context.Canceled) holds.
//
// # Decoding
//
// The SDK builds and sends the request, handles the HTTP exchange and
// frames the server-sent events ([ssestream]); the provider decodes each
// event's JSON itself, with a small scanner that reads only the fields it
// needs. The SDK's typed decoding of a chunk (ChatCompletionChunk, through
// reflection, with metadata for every field and 50 allocations per event)
// would be nearly all the cost of a stream: a recorded stream decodes at
// about 25 MB/s through it, and at about 450 MB/s through the scanner (on
// 2 vCPUs; see BenchmarkStreamDecode and BenchmarkStreamDecodeSDK). The
// scanner also reads the fields the SDK does not know (reasoning_content)
// without a second pass, and keeps the bytes of every text and argument
// piece as the server sent them, where encoding/json would replace a UTF-8
// character split between two pieces with U+FFFD.
//
// [ssestream]: https://pkg.go.dev/github.com/openai/openai-go/v3/packages/ssestream
package openai

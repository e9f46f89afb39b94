// Package anthropic is a [model.Provider] for Anthropic's Messages API
// (Claude), built on github.com/anthropics/anthropic-sdk-go. It streams
// every call (POST /v1/messages with "stream": true) and turns the server's
// events into chunks ([model.Chunk]).
//
// Importing the package registers it as the provider "anthropic"
// ([model.Register]); a program that does not import it links none of its
// SDK.
//
// Create one with [New]; it is safe for concurrent use. It never retries:
// wrap it in [model.WithRetry], which retries the failures it classifies as
// [model.ErrorRateLimit] and [model.ErrorTransient]. The SDK's own retries
// are off, and the SDK reads nothing from the environment (no
// ANTHROPIC_BASE_URL, no profile): the [Config] says everything.
//
// # API key
//
// The key is resolved for each request: the environment variable
// Config.APIKeyEnv (default ANTHROPIC_API_KEY), else Request.Secret of that
// name. Without either, Stream fails with a [model.ErrorAuth] error that
// names the variable. The key travels in the x-api-key header only. It is
// never part of an error, a chunk or a log: errors are built from the
// server's error message, with the key, and its common encodings (base64,
// hex, percent and JSON escapes), replaced by "[secret NAME]", NAME being
// Config.APIKeyEnv, should a server echo it (the masking is
// internal/secret's Redactor, the runtime's one redactor), and they do not
// wrap the SDK's errors (which hold the request and its headers).
//
// # Request
//
// Request.System is the system parameter. The history maps as follows:
//
//   - a user message is a user text block;
//   - an assistant message is its text block (if any) followed by one
//     tool_use block per tool call, whose input is the call's arguments;
//   - a tool message is a tool_result block (tool_use_id, content, and
//     is_error when the call failed) in a user message;
//   - a system message inside the history (extensions inject those) is a
//     user text block "[system] <content>".
//
// Consecutive messages of the same role become one message, as Anthropic
// requires user and assistant to alternate: the results of parallel tool
// calls share one user message. In a user message the tool_result blocks
// come first, as Anthropic requires, then the text blocks in history order.
// Empty and whitespace-only texts are left out (Anthropic refuses them), and
// a message left with no content is dropped.
//
// Injected system messages are folded into the history rather than
// appended to the system parameter for two reasons: their position in the
// conversation is part of their meaning (a reminder after a tool result is
// about that result), and the system parameter heads the prompt, so changing
// it with each injection would invalidate Anthropic's prompt cache for the
// whole conversation.
//
// Tool call arguments are JSON text the model produced, possibly malformed.
// Anthropic wants the input of a tool_use block to be a JSON object, so
// arguments that are not one (malformed, empty, or another JSON value) are
// sent as {}. The raw text is not kept: the tool's result, which the runtime
// reports as an error for malformed arguments, tells the model what went
// wrong, and putting the text in a made-up field would show the model an
// input shape its tool does not have.
//
// Tools are sent with their Parameters as input_schema, byte for byte
// (compacted), so that the prompt prefix stays stable for caching; a schema
// without "type" gets "type":"object", and an empty schema is
// {"type":"object","properties":{}}.
//
// max_tokens, which Anthropic requires, is Request.MaxOutputTokens, else
// Config.MaxOutputTokens, else 4096 (enough for a long answer or a large
// tool call, and accepted by every Claude model).
//
// With Config.PromptCache, the system prompt and the last block of the
// history are marked with cache_control breakpoints, so each step reads the
// previous step's prefix from Anthropic's prompt cache.
//
// # Extended thinking
//
// Config.Thinking > 0 enables extended thinking with that budget (at least
// 1024 tokens, as Anthropic requires). Anthropic counts thinking tokens in
// max_tokens, so the budget is added to the answer's bound: max_tokens =
// MaxOutputTokens + Thinking.
//
// Anthropic requires the thinking blocks of an assistant message that
// called tools to come back, signed and unchanged, in the next request of
// the tool loop. A [model.Chunk] has no field for a signature, and a
// history message keeps only the reasoning text, so the provider keeps the
// signed blocks itself, in memory, keyed by the ID of the response's first
// tool call (the last 1024 such responses), and puts them back in front of
// the assistant message that holds that call. When it no longer has them
// (after a restart, or a response the provider did not stream) and the last
// assistant message called tools, it sends that request without thinking,
// which is what Anthropic's error for the case advises; thinking resumes
// with the next step whose history allows it. Message.Reasoning alone is
// never sent back: without its signature Anthropic refuses it.
//
// # Chunks
//
//   - text_delta: [model.KindText];
//   - thinking_delta: [model.KindReasoning]; a redacted_thinking block
//     streams nothing (it holds no readable text; its encrypted data is
//     kept for the next request like a signature);
//   - a tool_use block: [model.KindToolCallStart] (ID, name), a
//     [model.KindToolCallDelta] per non-empty input_json_delta, and
//     [model.KindToolCallEnd] at its content_block_stop. A block that
//     received no delta delivers the input of its content_block_start
//     ({} for a tool without arguments) as one delta before its end;
//   - one [model.KindUsage] chunk after the last content, when the message
//     stops: input, cache read and cache write tokens from message_start
//     (raised by message_delta's cumulative counts when it has them),
//     output tokens from message_delta. As in Anthropic's accounting,
//     InputTokens does not include the cached tokens. A tool_use block
//     still open at message_stop is ended before it.
//
// Other blocks (citations, server tools) and the stop reason are not
// streamed: [model.Chunk] has no kinds for them.
//
// After message_stop the stream reads the body to its end when Recv is
// called for io.EOF, so that the connection is reused; Close releases the
// body at any time. Recv after Close returns an error.
//
// # Errors
//
// An HTTP error when the stream opens is returned by Stream as a
// [*model.Error]: its kind comes from [model.StatusKind] (529, Anthropic's
// "overloaded", is transient), except that a 4xx whose message says the
// prompt is too long ("prompt is too long: 210000 tokens > 200000 maximum")
// is [model.ErrorContextWindow]. RetryAfter comes from the retry-after
// headers, and Message is the server's error message. A network failure is
// [model.ErrorTransient].
//
// A failure after the stream opened ends it with a [model.KindError] chunk
// holding a [*model.Error]: an error event (overloaded_error and api_error
// transient, rate_limit_error rate limited, invalid_request_error an
// invalid request or, by its message, a context window error,
// authentication_error and permission_error auth, other types
// [model.ErrorOther]), a cut connection or a stream that ends before
// message_stop (transient). When the failure comes before any content, the
// error chunk is the first chunk, so that [model.WithRetry] retries it;
// after content, the usage so far goes out just before the error chunk.
//
// Cancelling the context ends the call with an error (returned by Stream,
// or in the error chunk) that satisfies errors.Is(err, context.Canceled).
package anthropic

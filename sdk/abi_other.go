//go:build !wasip1

package ganglion

// noHost stands in for the imports outside a wasip1 guest: the package
// compiles and its types work, but every import fails.
type noHost struct{}

// host is the module ganglion this guest talks to: outside a guest, none.
var host abi = noHost{}

const noHostMsg = "the host imports exist only in a GOOS=wasip1 guest"

func (noHost) manifest([]byte) int32               { return int32(CodeFailed) }
func (noHost) register(int32, []byte) int32        { return int32(CodeFailed) }
func (noHost) field(int32, int32, []byte) int32    { return int32(CodeFailed) }
func (noHost) setField(int32, int32, []byte) int32 { return int32(CodeFailed) }
func (noHost) messagesLen(int32) int32             { return int32(CodeFailed) }
func (noHost) message(int32, int32, []byte) int32  { return int32(CodeFailed) }
func (noHost) emit(int32, []byte) int32            { return int32(CodeFailed) }
func (noHost) next(int32) int32                    { return int32(CodeFailed) }
func (noHost) stateGet(int32, []byte) int32        { return int32(CodeFailed) }
func (noHost) stateSet(int32, []byte) int32        { return int32(CodeFailed) }
func (noHost) publish(int32, string, []byte) int32 { return int32(CodeFailed) }
func (noHost) log(int32, string) int32             { return 0 }
func (noHost) secret(int32, string, []byte) int32  { return int32(CodeFailed) }
func (noHost) setError(string) int32               { return 0 }
func (noHost) inbox(*[3]uint64) int32              { return int32(CodeFailed) }

func (noHost) agentsRequest(int32, []byte, []byte) int32 { return int32(CodeFailed) }
func (noHost) agentsSend(int32, []byte) int32            { return int32(CodeFailed) }
func (noHost) window(int32, []byte) int32                { return int32(CodeFailed) }
func (noHost) windowApply(int32, []byte, []byte) int32   { return int32(CodeFailed) }
func (noHost) complete(int32, []byte, []byte) int32      { return int32(CodeFailed) }
func (noHost) pause(int32, []byte, []byte) int32         { return int32(CodeFailed) }
func (noHost) httpRequest(int32, []byte, []byte) int32   { return int32(CodeFailed) }

func (noHost) lastError(buf []byte) int32 {
	if len(noHostMsg) <= len(buf) {
		copy(buf, noHostMsg)
	}
	return int32(len(noHostMsg))
}

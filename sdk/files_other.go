//go:build !wasip1

package ganglion

func (noHost) fileRead(int32, string, []byte) int32         { return int32(CodeFailed) }
func (noHost) fileList(int32, string, []byte) int32         { return int32(CodeFailed) }
func (noHost) fileWrite(int32, string, []byte, int32) int32 { return int32(CodeFailed) }

package tokens

import (
	"strings"
	"sync"
)

// Encoding is a byte-pair encoding that counts tokens. It is safe for
// concurrent use.
type Encoding struct {
	name  string
	next  func(s string, i int) int // the end of the piece at i
	ranks func() ranks
	cache cache
}

// The encodings, loaded on first use: a vocabulary takes some megabytes.
var (
	cl100k = newEncoding("cl100k_base", nextCl100k, cl100kData)
	o200k  = newEncoding("o200k_base", nextO200k, o200kData)
)

func newEncoding(name string, next func(string, int) int, data string) *Encoding {
	return &Encoding{name: name, next: next, ranks: sync.OnceValue(func() ranks {
		return readRanks(name, data)
	})}
}

// Cl100k is cl100k_base: GPT-4, GPT-3.5, and the default for models of
// other makers, whose tokenizers are not public or differ by some percent.
func Cl100k() *Encoding { return cl100k }

// O200k is o200k_base: GPT-4o, GPT-4.1, GPT-4.5, GPT-5 and the o-series.
func O200k() *Encoding { return o200k }

// o200kModels are the prefixes of the model names that use o200k_base.
var o200kModels = []string{"gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "chatgpt-4o", "o1", "o3", "o4", "gpt-oss"}

// ForModel returns the encoding of the model named model: o200k_base for
// OpenAI's models since GPT-4o, cl100k_base for the rest. A name with a
// provider's prefix ("openai/gpt-4o") or a fine-tune's ("ft:gpt-4o-...")
// counts as the model it names.
func ForModel(model string) *Encoding {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	m = strings.TrimPrefix(m, "ft:")
	for _, p := range o200kModels {
		if strings.HasPrefix(m, p) {
			return o200k
		}
	}
	return cl100k
}

// Name returns the encoding's name, as tiktoken names it.
func (e *Encoding) Name() string { return e.name }

// Count returns the number of tokens s encodes to.
func (e *Encoding) Count(s string) int {
	n := 0
	for i := 0; i < len(s); {
		j := e.next(s, i)
		n += e.piece(s[i:j])
		i = j
	}
	return n
}

// piece counts one piece: from the cache, or by encoding it.
func (e *Encoding) piece(p string) int {
	if n, ok := e.cache.get(p); ok {
		return n
	}
	n := e.ranks().count(p)
	e.cache.put(p, n)
	return n
}

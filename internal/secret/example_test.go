package secret_test

import (
	"bytes"
	"fmt"
	"log"

	"github.com/ganglion-dev/ganglion/internal/secret"
)

// ExampleNewKeyring seals a value under one name and opens it; the same
// bytes under another name do not open.
func ExampleNewKeyring() {
	key := bytes.Repeat([]byte{7}, secret.KeyLen) // use LoadKeyring for a real key
	k, err := secret.NewKeyring(key)
	if err != nil {
		log.Fatal(err)
	}
	sealed, err := k.Seal([]byte("sk-proj-1234"), "support\x00ticket-42\x00OPENAI_API_KEY")
	if err != nil {
		log.Fatal(err)
	}
	plaintext, err := k.Open(sealed, "support\x00ticket-42\x00OPENAI_API_KEY")
	fmt.Printf("%s %v\n", plaintext, err)
	_, err = k.Open(sealed, "support\x00ticket-42\x00GITHUB_TOKEN")
	fmt.Println(err)
	// Output:
	// sk-proj-1234 <nil>
	// secret: cannot open sealed value: wrong key or tampered data
}

// ExampleNewRedactor masks secret values in a log line.
func ExampleNewRedactor() {
	r := secret.NewRedactor(map[string]string{
		"OPENAI_API_KEY": "sk-proj-1234",
		"PIN":            "42", // too short to mask
	})
	fmt.Println(r.Redact("POST /v1/chat Authorization: Bearer sk-proj-1234 pin=42"))
	// Output:
	// POST /v1/chat Authorization: Bearer [secret OPENAI_API_KEY] pin=42
}

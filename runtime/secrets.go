package runtime

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/internal/secret"
	"github.com/ganglion-dev/ganglion/internal/turnhost"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// SecretKeyEnv holds the key sealing provided secrets: 32 bytes, base64 or
// hex. Unset: the key file ([WithSecretKeyFile]).
const SecretKeyEnv = "GANGLION_SECRET_KEY"

// openKeyring picks the key that seals secrets: the option's, the
// environment's, the key file's. A runtime without a data directory (a
// memory store) seals with a key of its own that dies with it.
func (r *Runtime) openKeyring(o *options, dataDir string) error {
	switch {
	case o.secretKey != nil:
		k, err := secret.NewKeyring(o.secretKey)
		if err != nil {
			return fmt.Errorf("secret key: %w", err)
		}
		r.keyring = k
		return nil
	case o.secretKeyFile != "" || dataDir != "":
		path := o.secretKeyFile
		if path == "" {
			// Beside the data directory, named after it, not in it: the
			// database's files and the key that opens its secrets are not
			// copied together by accident.
			path = filepath.Clean(dataDir) + ".key"
		}
		k, err := secret.LoadKeyring(SecretKeyEnv, path)
		if err != nil {
			return fmt.Errorf("secret key: %w", err)
		}
		r.keyring = k
		return nil
	}
	var (
		k   *secret.Keyring
		err error
	)
	if os.Getenv(SecretKeyEnv) != "" {
		k, err = secret.LoadKeyring(SecretKeyEnv, "")
	} else {
		key := make([]byte, secret.KeyLen)
		rand.Read(key) // never fails (crypto/rand since Go 1.24)
		k, err = secret.NewKeyring(key)
	}
	if err != nil {
		return fmt.Errorf("secret key: %w", err)
	}
	r.keyring = k
	return nil
}

// secretAAD binds a sealed value to where it is stored, so that a value
// copied under another name or instance does not open.
func secretAAD(agent, instance, name string) string {
	return agent + "\x00" + instance + "\x00" + name
}

func (r *Runtime) putSecret(ctx context.Context, agent, instance, name, value string) error {
	sealed, err := r.keyring.Seal([]byte(value), secretAAD(agent, instance, name))
	if err != nil {
		return fmt.Errorf("seal secret %q: %w", name, err)
	}
	if err := r.env.Store.PutSecret(ctx, agent, instance, name, sealed); err != nil {
		return fmt.Errorf("store secret %q: %w", name, err)
	}
	return nil
}

// secret returns the value of the instance's secret name.
func (r *Runtime) secret(ctx context.Context, agent, instance, name string) (string, bool, error) {
	sealed, found, err := r.env.Store.GetSecret(ctx, agent, instance, name)
	if err != nil || !found {
		return "", false, err
	}
	v, err := r.keyring.Open(sealed, secretAAD(agent, instance, name))
	if err != nil {
		return "", false, fmt.Errorf("open secret %q: %w", name, err)
	}
	return string(v), true, nil
}

// secrets returns every secret of the instance, by name.
func (r *Runtime) secrets(ctx context.Context, agent, instance string) (map[string]string, error) {
	names, err := r.env.Store.ListSecrets(ctx, agent, instance)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		v, ok, err := r.secret(ctx, agent, instance, n)
		if err != nil {
			return nil, err
		}
		if ok {
			out[n] = v
		}
	}
	return out, nil
}

// idempotencyKeyEnv is the environment variable that gives each
// execute_command its call's idempotency key (see
// [pipeline.ToolCallContext.IdempotencyKey]): a command whose effect must
// not happen twice records it and skips a key it has seen.
const idempotencyKeyEnv = "GANGLION_IDEMPOTENCY_KEY"

// callEnv is the workspace's WithCallEnv: the call's idempotency key, and
// the instance's secrets, as environment variables of its commands.
func (r *Runtime) callEnv(_ context.Context, c *pipeline.ToolCallContext) ([]string, error) {
	ts, ok := turnhost.Get(c).(*turnState)
	if !ok {
		return nil, nil
	}
	env := make([]string, 0, len(ts.Inst.SecretValues())+1)
	for n, v := range ts.Inst.SecretValues() {
		env = append(env, n+"="+v)
	}
	slices.Sort(env)
	return append(env, idempotencyKeyEnv+"="+c.IdempotencyKey()), nil
}

// secretsHost is an agent's side of extensions.SecretsHost: an extension
// reads the secrets of its own agent's instances, and only those its
// grants name (extensions.Secrets checks them).
type secretsHost struct{ a *agent }

var _ extensions.SecretsHost = secretsHost{}

func (h secretsHost) Secret(ctx context.Context, agent, instanceKey, name string) (string, bool, error) {
	if agent != h.a.Name {
		return "", false, fmt.Errorf("agent %q cannot read agent %q's secrets", h.a.Name, agent)
	}
	return h.a.rt.secret(ctx, agent, instanceKey, name)
}

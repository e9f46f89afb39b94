package config

import (
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/ganglion-dev/ganglion/internal/envref"
)

// Cluster makes the processes that run the same config one system, on
// NATS with JetStream: they share the store, and each instance is owned by
// one process at a time (a lease).
type Cluster struct {
	// URL is required: NATS servers, comma-separated; ${VAR} expands.
	URL string `yaml:"url"`
	// Credentials is a NATS .creds file.
	Credentials string `yaml:"credentials"`
	// Name prefixes buckets and subjects; default "ganglion".
	Name string `yaml:"name"`
	// Replicas: 1 to 5; default 1.
	Replicas int `yaml:"replicas"`
	// LeaseTTL is how long a stopped process keeps its instances: whole
	// seconds, 1s to 5m; default 10s.
	LeaseTTL string `yaml:"lease_ttl"`
	// RequestTimeout bounds a store request, which then fails as
	// unavailable: 1s to 5m; default 10s.
	RequestTimeout string `yaml:"request_timeout"`
}

// Bounds of [Cluster].
const (
	maxReplicas = 5
	maxLeaseTTL = 5 * time.Minute
	// A request timeout below a second would fail requests a busy
	// cluster answers.
	minRequestTimeout = time.Second
	maxRequestTimeout = 5 * time.Minute
)

var clusterName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func (v *validator) cluster(c *Cluster) {
	if c == nil {
		return
	}
	if strings.TrimSpace(c.URL) == "" {
		v.errorf("$.cluster.url", "cluster: url is required: the NATS server to connect to (nats://host:4222)")
	}
	for _, r := range envref.Refs(c.URL) {
		if r.Secret {
			v.errorf("$.cluster.url", "cluster: url: %s is a provided secret, which an instance has, not the runtime; use ${VAR} from the environment", r)
		}
	}
	for i, u := range strings.Split(c.URL, ",") {
		u = strings.TrimSpace(u)
		if u == "" || len(envref.Refs(u)) > 0 {
			continue // checked once expanded, when connecting
		}
		p, err := url.Parse(u)
		if err == nil && p.User != nil {
			if pw, ok := p.User.Password(); ok && pw != "" {
				v.maybeKeys = append(v.maybeKeys, pw) // masked in every excerpt
			}
		}
		if err != nil || p.Host == "" || (p.Scheme != "nats" && p.Scheme != "tls" && p.Scheme != "ws" && p.Scheme != "wss") {
			shown := u
			if err == nil {
				shown = p.Redacted()
			} else if at := strings.LastIndex(u, "@"); at >= 0 {
				shown = "…" + u[at:]
			}
			v.errorf("$.cluster.url", "cluster: url %d (%s) is not a NATS URL: want nats://host:port (or tls://, ws://, wss://)", i+1, shown)
		}
	}
	if c.Name != "" && !clusterName.MatchString(c.Name) {
		v.errorf("$.cluster.name", "cluster: name %q: use 1 to 64 letters, digits, '-' or '_' (it names buckets and subjects)", c.Name)
	}
	if c.Replicas < 0 || c.Replicas > maxReplicas {
		v.errorf("$.cluster.replicas", "cluster: replicas must be between 1 and %d (0 or absent: 1), got %d", maxReplicas, c.Replicas)
	}
	if c.LeaseTTL != "" {
		d, err := time.ParseDuration(c.LeaseTTL)
		switch {
		case err != nil:
			v.errorf("$.cluster.lease_ttl", "cluster: lease_ttl %q is not a duration (\"10s\", \"1m\")", c.LeaseTTL)
		case d < time.Second || d > maxLeaseTTL || d%time.Second != 0:
			v.errorf("$.cluster.lease_ttl", "cluster: lease_ttl must be whole seconds from 1s to %v, got %v", maxLeaseTTL, d)
		}
	}
	if c.RequestTimeout != "" {
		d, err := time.ParseDuration(c.RequestTimeout)
		switch {
		case err != nil:
			v.errorf("$.cluster.request_timeout", "cluster: request_timeout %q is not a duration (\"10s\", \"1m\")", c.RequestTimeout)
		case d < minRequestTimeout || d > maxRequestTimeout:
			v.errorf("$.cluster.request_timeout", "cluster: request_timeout must be from %v to %v, got %v", minRequestTimeout, maxRequestTimeout, d)
		}
	}
}

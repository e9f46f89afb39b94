package config

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/ganglion-dev/ganglion/store"
)

// webhookEvents are the notification types a webhook may want.
var webhookEvents = []string{"pending.created", "pending.resolved", "task.answered", "turn.failed"}

// webhooks checks the file's webhooks.
func (v *validator) webhooks(hooks []Webhook) {
	for i, h := range hooks {
		path := "$.webhooks[" + strconv.Itoa(i) + "]"
		pre := "webhooks[" + strconv.Itoa(i) + "]: "
		switch u, err := url.Parse(h.URL); {
		case h.URL == "":
			v.errorf(path, "%surl is required", pre)
		case err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
			v.errorf(path+".url", "%surl %q: want an http or https URL with a host, as in https://hooks.example.com/ganglion", pre, h.URL)
		}
		switch {
		case h.SecretEnv == "":
			v.errorf(path, "%ssecret_env is required: the environment variable that holds the signing secret (the secret never goes in this file)", pre)
		case store.ValidateEnvName("secret_env", h.SecretEnv) != nil:
			v.errorf(path+".secret_env", "%ssecret_env %q is not an environment variable's name: want [A-Za-z_][A-Za-z0-9_]{0,63}", pre, h.SecretEnv)
		}
		for j, e := range h.Events {
			if !slices.Contains(webhookEvents, e) {
				v.errorf(path+".events["+strconv.Itoa(j)+"]", "%sunknown event %q (events: %s)", pre, e, strings.Join(webhookEvents, ", "))
			}
		}
	}
}

package protocol

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/ganglion-dev/ganglion/store"
)

// KindDependencyRequest is the name of the block that asks for a
// dependency: a secret, a setting, a service URL, a file, a permission or a
// package.
const KindDependencyRequest = "DEPENDENCY_REQUEST"

// DependencyType is the kind of thing a [DependencyRequest] asks for.
type DependencyType string

// The types of dependency.
const (
	TypeAPIKey      DependencyType = "api_key"      // an API key (a secret)
	TypeEnvVariable DependencyType = "env_variable" // an environment variable's value (may be a secret)
	TypeService     DependencyType = "service"      // an http(s) URL of a service
	TypeFile        DependencyType = "file"         // a file in the workspace
	TypePermission  DependencyType = "permission"   // a yes or no
	TypePackage     DependencyType = "package"      // an npm package name
)

var dependencyTypes = []DependencyType{TypeAPIKey, TypeEnvVariable, TypeService, TypeFile, TypePermission, TypePackage}

// DependencyRequest is the value of a DEPENDENCY_REQUEST block:
//
//	[DEPENDENCY_REQUEST]
//	type: api_key
//	name: OPENAI_API_KEY
//	description: Required for OpenAI API integration
//	required: true
//	[/DEPENDENCY_REQUEST]
//
// For api_key and env_variable, Name is an environment variable name
// ([A-Za-z_][A-Za-z0-9_]*): tools receive the value under it.
type DependencyRequest struct {
	// Type is one of the Type constants (the block's value is matched
	// ignoring case).
	Type DependencyType `json:"type"`
	// Name names the dependency.
	Name string `json:"name"`
	// Description says what it is for.
	Description string `json:"description"`
	// Required dependencies must be provided; an optional one may be
	// declined with an empty value.
	Required bool `json:"required"`
}

// Secret reports whether the dependency's value is a secret (api_key and
// env_variable): never to be logged, put in events or in error texts.
func (d *DependencyRequest) Secret() bool {
	return d.Type == TypeAPIKey || d.Type == TypeEnvVariable
}

var dependencyKind = Kind{
	Name: KindDependencyRequest,
	Fields: []FieldSpec{
		{Name: "type", Type: TextField, Required: true},
		{Name: "name", Type: TextField, Required: true},
		{Name: "description", Type: TextField, Required: true},
		{Name: "required", Type: BoolField},
	},
	Build: buildDependency,
}

func buildDependency(f *Fields) (any, error) {
	d := &DependencyRequest{Name: f.Text("name"), Description: f.Text("description"), Required: f.Bool("required")}
	typ := f.Text("type")
	for _, t := range dependencyTypes {
		if strings.EqualFold(typ, string(t)) {
			d.Type = t
		}
	}
	if d.Type == "" {
		return nil, &FieldError{"type", fmt.Sprintf("unknown type %q (want api_key, env_variable, service, file, permission or package)", typ)}
	}
	if d.Secret() && store.ValidateEnvName("name", d.Name) != nil {
		return nil, &FieldError{"name", fmt.Sprintf("name %q must be an environment variable name for type %s (1 to 64 letters, digits and _, not starting with a digit)", d.Name, d.Type)}
	}
	return d, nil
}

// Limits on dependency values.
const (
	minAPIKeyLen   = 8
	maxEnvValueLen = 10000
	maxFilePathLen = 500
	maxPackageLen  = 214
)

// ValidateDependencyValue checks a value provided for d and returns it in
// canonical form. Surrounding blanks are removed from every type of value but
// env_variable, which is kept as given.
//
//   - An empty (or blank) value is refused for a required dependency; for an
//     optional one it declines the dependency and yields "".
//   - api_key: letters, digits, _ and -, at least 8 characters.
//   - env_variable: at most 10000 bytes, no NUL byte.
//   - service: an http or https URL with a host.
//   - file: a path, relative to the workspace or absolute inside it, at most
//     500 bytes, that names an existing file (not a directory) whose path,
//     symbolic links included, stays inside the workspace. The canonical
//     form is the clean path relative to the workspace, with "/"
//     separators. A file that does not exist is refused: the request asks
//     for a file the agent will read, the human is there to correct a typo,
//     and a path that does not exist cannot be proven to stay inside the
//     workspace once created (a symbolic link may appear on its way).
//     Consumers must still open it through the workspace's [os.Root].
//   - permission: true, false, yes or no in any case; canonical "true" or
//     "false".
//   - package: an npm package name: an optional "@scope/", then lowercase
//     letters, digits, ".", "_", "~" and "-", neither part starting with "."
//     or "_", at most 214 characters, not "node_modules" or "favicon.ico".
//     "lodash.merge" and "@types/node" are valid.
//
// workspace is used for file values only and may be nil otherwise.
//
// # Errors
//
// A refused value gives an error that matches [ErrInvalid] and says why, e.g.
// `value for "OPENAI_API_KEY" is too short for an API key: it needs at least
// 8 characters`, or `value for "DATA" escapes the workspace (path
// traversal)`. No error text ever contains the value, nor a part of it, for
// any type: values may be secrets (a service URL can carry a password).
func ValidateDependencyValue(d *DependencyRequest, value string, workspace *os.Root) (string, error) {
	if d == nil {
		return "", errors.New("validate dependency value: nil request")
	}
	v := value
	if d.Type != TypeEnvVariable {
		v = strings.TrimSpace(value)
	}
	if strings.TrimSpace(value) == "" {
		if d.Required {
			return "", invalid(fmt.Sprintf("value for %q cannot be empty: the dependency is required", d.Name))
		}
		return "", nil
	}
	switch d.Type {
	case TypeAPIKey:
		return validateAPIKey(d, v)
	case TypeEnvVariable:
		return validateEnvValue(d, v)
	case TypeService:
		return validateServiceURL(d, v)
	case TypeFile:
		return validateFilePath(d, v, workspace)
	case TypePermission:
		if b, ok := parseBool(v); ok {
			if b {
				return "true", nil
			}
			return "false", nil
		}
		return "", invalid(fmt.Sprintf("value for %q must be true, false, yes or no", d.Name))
	case TypePackage:
		if why := npmNameProblem(v); why != "" {
			return "", invalid(fmt.Sprintf("value for %q is not a valid npm package name: %s", d.Name, why))
		}
		return v, nil
	}
	return "", fmt.Errorf("validate dependency value: unknown dependency type %q", d.Type)
}

func validateAPIKey(d *DependencyRequest, v string) (string, error) {
	for i := 0; i < len(v); i++ {
		if c := v[i]; !(isIdentByte(c) || c == '-') {
			return "", invalid(fmt.Sprintf("value for %q is not a valid API key: only letters, digits, _ and - are allowed", d.Name))
		}
	}
	if len(v) < minAPIKeyLen {
		return "", invalid(fmt.Sprintf("value for %q is too short for an API key: it needs at least %d characters", d.Name, minAPIKeyLen))
	}
	return v, nil
}

func validateEnvValue(d *DependencyRequest, v string) (string, error) {
	if len(v) > maxEnvValueLen {
		return "", invalid(fmt.Sprintf("value for %q is too long: the limit is %d bytes", d.Name, maxEnvValueLen))
	}
	if strings.IndexByte(v, 0) >= 0 {
		return "", invalid(fmt.Sprintf("value for %q contains a NUL byte", d.Name))
	}
	return v, nil
}

func validateServiceURL(d *DependencyRequest, v string) (string, error) {
	// url.Parse's errors quote the URL: they are not passed on.
	u, err := url.Parse(v)
	if err != nil {
		return "", invalid(fmt.Sprintf("value for %q is not a valid URL", d.Name))
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return "", invalid(fmt.Sprintf("value for %q must be an http or https URL", d.Name))
	}
	if u.Hostname() == "" {
		return "", invalid(fmt.Sprintf("value for %q is a URL without a host", d.Name))
	}
	return v, nil
}

func validateFilePath(d *DependencyRequest, v string, root *os.Root) (string, error) {
	if root == nil {
		return "", fmt.Errorf("validate dependency value %q: no workspace to resolve file paths in", d.Name)
	}
	if len(v) > maxFilePathLen {
		return "", invalid(fmt.Sprintf("value for %q is too long for a file path: the limit is %d bytes", d.Name, maxFilePathLen))
	}
	if strings.IndexByte(v, 0) >= 0 {
		return "", invalid(fmt.Sprintf("value for %q contains a NUL byte", d.Name))
	}
	rel := filepath.FromSlash(v)
	if filepath.IsAbs(rel) {
		base, err := filepath.Abs(root.Name())
		if err == nil {
			rel, err = filepath.Rel(base, rel)
		}
		if err != nil {
			return "", invalid(fmt.Sprintf("value for %q escapes the workspace (path traversal)", d.Name))
		}
	}
	// A containment check, not a search for "..": "a/../b" stays inside,
	// "a/../../b" does not, and "..b" is a plain name.
	if !filepath.IsLocal(rel) {
		return "", invalid(fmt.Sprintf("value for %q escapes the workspace (path traversal)", d.Name))
	}
	rel = filepath.Clean(rel)
	fi, err := root.Stat(rel) // follows symbolic links, refusing any that leaves the root
	if err != nil {
		var pe *fs.PathError
		cause := err
		if errors.As(err, &pe) {
			cause = pe.Err // without the path
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", invalidCause(fmt.Sprintf("value for %q names a file that does not exist in the workspace", d.Name), fs.ErrNotExist)
		case errors.Is(err, fs.ErrPermission):
			return "", invalidCause(fmt.Sprintf("value for %q names a file that cannot be accessed: permission denied", d.Name), fs.ErrPermission)
		case errors.Is(cause, escapeError(root)):
			return "", invalidCause(fmt.Sprintf("value for %q escapes the workspace through a symbolic link", d.Name), cause)
		}
		return "", invalidCause(fmt.Sprintf("value for %q names a path that cannot be resolved in the workspace", d.Name), cause)
	}
	if fi.IsDir() {
		return "", invalid(fmt.Sprintf("value for %q names a directory, not a file", d.Name))
	}
	return filepath.ToSlash(rel), nil
}

// escapeError returns the error an [os.Root] gives for a path that leaves
// it. The os package does not export it; asking the root for ".." yields it.
func escapeError(root *os.Root) error {
	_, err := root.Stat("..")
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return nil
}

// npmNameProblem returns why s is not a valid npm package name, or "".
func npmNameProblem(s string) string {
	if len(s) > maxPackageLen {
		return fmt.Sprintf("it is longer than %d characters", maxPackageLen)
	}
	if s == "node_modules" || s == "favicon.ico" {
		return "it is a reserved name"
	}
	name := s
	if s[0] == '@' {
		scope, pkg, ok := strings.Cut(s[1:], "/")
		if !ok || scope == "" || pkg == "" {
			return `a scoped name has the form "@scope/name"`
		}
		if why := npmPartProblem(scope); why != "" {
			return why
		}
		name = pkg
	}
	return npmPartProblem(name)
}

func npmPartProblem(p string) string {
	if p[0] == '.' || p[0] == '_' {
		return `it cannot start with "." or "_"`
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '_', c == '~', c == '-':
		case c >= 'A' && c <= 'Z':
			return "it must be lowercase"
		default:
			return `it may only hold lowercase letters, digits, ".", "_", "~" and "-" (after an optional "@scope/")`
		}
	}
	return ""
}

package skills

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// credentials are a skill's secrets for one call, read fresh so rotated
// secrets apply without a restart.
type credentials struct {
	authHeader, authValue string // empty when the skill has no auth
	token                 string // the secret inside authValue
	hmacKey               []byte // nil: identity sent unsigned
}

// secrets returns what credentials redact from anything shown to the model.
func (c credentials) secrets() []string {
	var out []string
	if c.token != "" {
		out = append(out, c.token)
	}
	if len(c.hmacKey) > 0 {
		out = append(out, string(c.hmacKey))
	}
	return out
}

func (c credentials) apply(h http.Header) {
	if c.authHeader != "" {
		h.Set(c.authHeader, c.authValue)
	}
}

// credentials reads the skill's token and HMAC key. A configured secret
// that is missing is an error rather than a silent unauthenticated or
// unsigned call: fail closed. Errors wrap ErrMisconfigured and name the
// variable or file, never the value.
func (r *Registry) credentials(s *Skill) (credentials, error) {
	var c credentials
	if a := s.Auth; a != nil {
		token, err := r.readSecret(a.TokenEnv, a.TokenFile)
		if err != nil {
			return c, fmt.Errorf("skill %s %w: %s: %s", s.Name, ErrMisconfigured, authField(a), err)
		}
		c.token = token
		c.authHeader, c.authValue = "Authorization", "Bearer "+token
		if a.Type == AuthHeader {
			c.authHeader, c.authValue = a.Header, token
		}
	}
	field, env, file := r.hmacKeySource(s)
	if env != "" || file != "" {
		key, err := r.readSecret(env, file)
		if err != nil {
			return c, fmt.Errorf("skill %s %w: %s: %s; refusing to send an unsigned identity", s.Name, ErrMisconfigured, field, err)
		}
		c.hmacKey = []byte(key)
	}
	return c, nil
}

// readSecret reads an environment variable or a secret file. Errors name
// the source, never the content.
func (r *Registry) readSecret(env, file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("cannot read secret file %s: %v", file, unwrapPathError(err))
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("secret file %s is empty", file)
		}
		return v, nil
	}
	v := r.opts.Getenv(env)
	if v == "" {
		return "", fmt.Errorf("environment variable %s is not set", env)
	}
	return v, nil
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// hmacKeySource returns which setting names the skill's HMAC key; env and
// file are both empty for a skill with identity: none.
func (r *Registry) hmacKeySource(s *Skill) (field, env, file string) {
	switch {
	case s.Identity.None:
		return "identity", "", ""
	case s.Identity.HMACKeyFile != "":
		return "identity.hmac_key_file", "", s.Identity.HMACKeyFile
	case s.Identity.HMACKeyEnv != "":
		return "identity.hmac_key_env", s.Identity.HMACKeyEnv, ""
	}
	return "skills.identity_key (the gateway's default)", r.opts.DefaultHMACKeyEnv, r.opts.DefaultHMACKeyFile
}

// errUnsigned refuses a skill that would send the caller's identity
// unsigned without saying so: a backend could not tell Hermes's headers
// from anyone's.
var errUnsigned = errors.New("no key signs the caller's identity: set identity.hmac_key_env or identity.hmac_key_file, " +
	"or the gateway's skills.identity_key; write identity: none to send it unsigned on purpose")

// CheckEnv reports every secret a skill needs that is missing now (unset
// variable, unreadable or empty file), one error per secret naming the
// skill and field. The gateway logs it at start; calls fail with
// ErrMisconfigured until the secret appears.
func (r *Registry) CheckEnv() error {
	var errs []error
	for _, s := range r.skills {
		if a := s.Auth; a != nil {
			if _, err := r.readSecret(a.TokenEnv, a.TokenFile); err != nil {
				errs = append(errs, fmt.Errorf("skill %s: %s: %s", s.Name, authField(a), err))
			}
		}
		if field, env, file := r.hmacKeySource(s); env != "" || file != "" {
			if _, err := r.readSecret(env, file); err != nil {
				errs = append(errs, fmt.Errorf("skill %s: %s: %s", s.Name, field, err))
			}
		}
	}
	return errors.Join(errs...)
}

func authField(a *Auth) string {
	if a.TokenFile != "" {
		return "auth.token_file"
	}
	return "auth.token_env"
}

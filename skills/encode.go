package skills

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// pathParamRE finds "{name}" placeholders in an endpoint path.
var pathParamRE = regexp.MustCompile(`\{([A-Za-z0-9_.\-]+)\}`)

// apiArgs are the top-level arguments under the API's names.
type apiArgs map[string]json.RawMessage

// mapArgs renames top-level arguments per parameter_map. changed reports
// whether anything was renamed.
func mapArgs(s *Skill, args json.RawMessage) (apiArgs, bool, error) {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, false, err
	}
	out := make(apiArgs, len(in))
	changed := false
	for k, v := range in {
		if api, ok := s.ParameterMap[k]; ok && api != k {
			k, changed = api, true
		}
		out[k] = v
	}
	return out, changed, nil
}

// newHTTPRequest builds the request for one attempt: endpoint placeholders
// filled, query parameters split off, the rest encoded in the skill's
// content type (or, for GET and DELETE, all in the query string). Errors
// wrap ErrInvalidArguments (a placeholder without its argument) or are
// plain (a URL that does not parse: misconfiguration).
func (r *Registry) newHTTPRequest(ctx context.Context, s *Skill, args json.RawMessage) (*http.Request, []byte, error) {
	fields, changed, err := mapArgs(s, args)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidArguments, err)
	}
	endpoint := s.Endpoint
	if isPath(endpoint) {
		endpoint = strings.TrimSuffix(r.opts.BaseURL, "/") + endpoint
	}
	var missing, bad []string
	endpoint = pathParamRE.ReplaceAllStringFunc(endpoint, func(m string) string {
		name := m[1 : len(m)-1]
		v, ok := fields[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		delete(fields, name)
		changed = true
		segment := strings.Join(jsonValues(v), ",")
		if !validPathSegment(segment) {
			bad = append(bad, name)
			return m
		}
		return url.PathEscape(segment)
	})
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("%w: the endpoint needs %s", ErrInvalidArguments, strings.Join(missing, ", "))
	}
	if len(bad) > 0 {
		return nil, nil, fmt.Errorf("%w: %s must not be empty, \".\" or \"..\" (it fills a path segment)", ErrInvalidArguments,
			strings.Join(bad, ", "))
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, nil, err
	}
	q := u.Query()
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if !methodHasBody[s.Method] || slices.Contains(s.QueryParams, name) {
			for _, v := range jsonValues(fields[name]) {
				q.Add(name, v)
			}
			delete(fields, name)
			changed = true
		}
	}
	u.RawQuery = q.Encode()
	if !methodHasBody[s.Method] {
		req, err := http.NewRequestWithContext(ctx, s.Method, u.String(), nil)
		return req, nil, err
	}
	body, contentType, err := encodeBody(s.ContentType, fields, args, changed)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, s.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", contentType)
	return req, body, nil
}

// validPathSegment refuses what would change which endpoint a filled-in
// path reaches: "." and ".." survive url.PathEscape and are resolved by
// proxies and servers ("/tickets/../status" is "/status"), and an empty
// value merges two slashes or drops the segment.
func validPathSegment(v string) bool {
	return v != "" && v != "." && v != ".."
}

// encodeBody encodes the remaining arguments. JSON bodies are the model's
// arguments byte for byte when nothing was renamed or moved.
func encodeBody(contentType string, fields apiArgs, original json.RawMessage, changed bool) ([]byte, string, error) {
	switch contentType {
	case ContentForm:
		form := url.Values{}
		for name, v := range fields {
			form[name] = jsonValues(v)
		}
		return []byte(form.Encode()), ContentForm, nil
	case ContentMultipart:
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		for _, name := range slices.Sorted(maps.Keys(fields)) {
			for _, v := range jsonValues(fields[name]) {
				if err := w.WriteField(name, v); err != nil {
					return nil, "", err
				}
			}
		}
		if err := w.Close(); err != nil {
			return nil, "", err
		}
		return b.Bytes(), w.FormDataContentType(), nil
	default:
		if !changed {
			return original, ContentJSON, nil
		}
		b, err := json.Marshal(fields) // sorted keys, values as received
		return b, ContentJSON, err
	}
}

// jsonValues turns a JSON value into form/query values: a string as is,
// an array of scalars as one value each, anything else as JSON text.
func jsonValues(v json.RawMessage) []string {
	var list []json.RawMessage
	if json.Unmarshal(v, &list) == nil {
		out := make([]string, 0, len(list))
		for _, item := range list {
			if s, ok := scalarText(item); ok {
				out = append(out, s)
				continue
			}
			return []string{string(v)} // nested: keep the JSON
		}
		return out
	}
	s, _ := scalarText(v)
	return []string{s}
}

// scalarText is a string's content, or a number/boolean/null as written;
// ok is false for objects and arrays (returned as JSON text).
func scalarText(v json.RawMessage) (string, bool) {
	var str string
	if json.Unmarshal(v, &str) == nil {
		return str, true
	}
	t := strings.TrimSpace(string(v))
	return t, t != "" && t[0] != '{' && t[0] != '['
}

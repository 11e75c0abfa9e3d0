package idemhttp

import (
	"errors"
	"fmt"
	"strings"
)

// MediaTypesDefault are the request media types a route takes unless it
// names its own: JSON (application/json, and any +json structured syntax
// suffix, RFC 6839), fingerprinted by the route's fingerprint.Spec.
var MediaTypesDefault = []string{"application/json", "*/*+json"}

// mediaRange is one of a route's media types: type/subtype, type/*, */*,
// or type/*+suffix (*/*+suffix), lower-cased.
type mediaRange struct {
	typ, sub string // "*" for any; sub "*+json" for any subtype with that suffix
}

// parseMediaRange checks one entry of Route.MediaTypes.
func parseMediaRange(s string) (mediaRange, error) {
	typ, sub, ok := strings.Cut(strings.ToLower(s), "/")
	m := mediaRange{typ, sub}
	switch {
	case !ok || typ == "" || sub == "" || strings.IndexByte(s, ';') >= 0:
		return m, fmt.Errorf("media type %q: want type/subtype, without parameters", s)
	case typ != "*" && !validToken(typ):
		return m, fmt.Errorf("media type %q: the type is not an RFC 9110 token", s)
	case sub == "*":
	case strings.HasPrefix(sub, "*+"):
		if !validToken(sub[2:]) {
			return m, fmt.Errorf("media type %q: the suffix is not an RFC 9110 token", s)
		}
	case typ == "*":
		return m, fmt.Errorf("media type %q: a type * needs a subtype * or *+suffix", s)
	case !validToken(sub):
		return m, fmt.Errorf("media type %q: the subtype is not an RFC 9110 token", s)
	}
	return m, nil
}

func (m mediaRange) String() string { return m.typ + "/" + m.sub }

// matches reports whether the media type typ/sub (as sent) is in m.
func (m mediaRange) matches(typ, sub string) bool {
	if m.typ != "*" && !strings.EqualFold(m.typ, typ) {
		return false
	}
	switch {
	case m.sub == "*":
		return true
	case strings.HasPrefix(m.sub, "*+"):
		sfx := m.sub[1:] // "+json"
		return len(sub) > len(sfx) && strings.EqualFold(sub[len(sub)-len(sfx):], sfx)
	}
	return strings.EqualFold(m.sub, sub)
}

// isAcceptRange reports whether m can be said in an Accept header (RFC 9110
// §12.5.1 has no suffix ranges).
func (m mediaRange) isAcceptRange() bool { return !strings.HasPrefix(m.sub, "*+") }

// contentType is a request's Content-Type as RFC 9110 §8.3.1 parses it:
// the type and the subtype as sent, and the charset parameter. It is parsed
// without allocating: it runs on every protected request.
type contentType struct {
	typ, sub   string
	charset    string // unquoted; "" if none
	hasCharset bool
}

// isJSON reports whether the media type is JSON: application/json or a
// +json structured syntax suffix (RFC 6839).
func (ct contentType) isJSON() bool {
	const suffix = "+json"
	return (strings.EqualFold(ct.typ, "application") && strings.EqualFold(ct.sub, "json")) ||
		(len(ct.sub) > len(suffix) && strings.EqualFold(ct.sub[len(ct.sub)-len(suffix):], suffix))
}

var errCharsetTwice = errors.New("the charset parameter is given twice")

// parseContentType parses media-type = type "/" subtype *( OWS ";" OWS
// [ name "=" ( token / quoted-string ) ] ).
func parseContentType(v string) (contentType, error) {
	var ct contentType
	slash := strings.IndexByte(v, '/')
	if slash < 0 {
		return ct, errors.New("no / between type and subtype")
	}
	ct.typ = v[:slash]
	rest := v[slash+1:]
	n := 0
	for n < len(rest) && isTchar(rest[n]) {
		n++
	}
	ct.sub, rest = rest[:n], rest[n:]
	if !validToken(ct.typ) || ct.sub == "" {
		return ct, errors.New("the type or the subtype is not an RFC 9110 token")
	}
	for {
		rest = trimOWS(rest)
		if rest == "" {
			return ct, nil
		}
		if rest[0] != ';' {
			return ct, fmt.Errorf("%q where a ; or the end was expected", rest)
		}
		rest = trimOWS(rest[1:])
		if rest == "" || rest[0] == ';' {
			continue // an empty parameter, which RFC 9110 allows
		}
		name, value, after, err := parseParameter(rest)
		if err != nil {
			return ct, err
		}
		if strings.EqualFold(name, "charset") {
			if ct.hasCharset {
				return ct, errCharsetTwice
			}
			ct.charset, ct.hasCharset = value, true
		}
		rest = after
	}
}

// parseParameter parses name "=" ( token / quoted-string ) at the start of
// s: the value unquoted, and what follows.
func parseParameter(s string) (name, value, rest string, err error) {
	eq := strings.IndexByte(s, '=')
	if eq <= 0 || !validToken(s[:eq]) {
		return "", "", "", fmt.Errorf("parameter %q: want name=value", s)
	}
	name, s = s[:eq], s[eq+1:]
	if s != "" && s[0] == '"' {
		value, rest, err = parseQuotedString(s)
		return name, value, rest, err
	}
	n := 0
	for n < len(s) && isTchar(s[n]) {
		n++
	}
	if n == 0 {
		return "", "", "", fmt.Errorf("parameter %s has no value", name)
	}
	return name, s[:n], s[n:], nil
}

// parseQuotedString parses an RFC 9110 quoted-string at the start of s.
func parseQuotedString(s string) (value, rest string, err error) {
	var out []byte // nil until the first quoted-pair: the common value is not copied
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			if out == nil {
				return s[1:i], s[i+1:], nil
			}
			return string(out), s[i+1:], nil
		case c == '\\' && i+1 < len(s):
			if out == nil {
				out = append([]byte(nil), s[1:i]...)
			}
			out = append(out, s[i+1])
			i++
		case (c < 0x20 && c != '\t') || c == 0x7f:
			return "", "", fmt.Errorf("a quoted value has byte 0x%02x", c)
		case out != nil:
			out = append(out, c)
		}
	}
	return "", "", errors.New("a quoted value has no closing quote")
}

// trimOWS drops spaces and tabs at the start of s.
func trimOWS(s string) string { return strings.TrimLeft(s, " \t") }

// bodyMediaType checks a request's Content-Type v against the route's media
// types, before the body is read, and says whether the body is JSON. An
// error is the detail of a 415. An empty v is taken here: the body must then
// be empty (emptyBodyOnly), which is known once it is read.
func (c *config) bodyMediaType(v string) (isJSON bool, err error) {
	if v == "" {
		return false, nil
	}
	ct, err := parseContentType(v)
	if err != nil {
		return false, fmt.Errorf("Content-Type %q does not parse: %v", v, err)
	}
	if !c.takes(ct) {
		return false, fmt.Errorf("Content-Type %s/%s is not accepted: this route takes %s", ct.typ, ct.sub, c.mediaList)
	}
	if ct.isJSON() && ct.hasCharset && !strings.EqualFold(ct.charset, "utf-8") {
		return false, fmt.Errorf("JSON is UTF-8 (RFC 8259): charset=%s is not accepted", ct.charset)
	}
	return ct.isJSON(), nil
}

// takes reports whether ct is one of the route's media types.
func (c *config) takes(ct contentType) bool {
	for _, m := range c.mediaTypes {
		if m.matches(ct.typ, ct.sub) {
			return true
		}
	}
	return false
}

// errNoContentType is a body sent without saying what it is.
func (c *config) errNoContentType() error {
	return fmt.Errorf("the body has no Content-Type: this route takes %s", c.mediaList)
}

// setMediaTypes checks and keeps a route's media types (MediaTypesDefault if
// nil), the list a 415 names and the Accept header it sends (RFC 9110
// §15.5.16), without the suffix ranges Accept cannot say.
func (c *config) setMediaTypes(types []string) error {
	if types == nil {
		types = MediaTypesDefault
	}
	if len(types) == 0 {
		return errors.New("an empty MediaTypes takes nothing (nil means MediaTypesDefault)")
	}
	var names, accept []string
	for _, s := range types {
		m, err := parseMediaRange(s)
		if err != nil {
			return err
		}
		c.mediaTypes = append(c.mediaTypes, m)
		names = append(names, m.String())
		if m.isAcceptRange() {
			accept = append(accept, m.String())
		}
	}
	c.mediaList, c.accept = strings.Join(names, ", "), strings.Join(accept, ", ")
	return nil
}

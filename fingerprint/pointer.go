package fingerprint

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// node is one reference token in the trie of a Spec's JSON Pointers. The
// root stands for the whole document ("").
type node struct {
	token    string // unescaped reference token
	index    int    // the array index the token denotes, or -1
	children []*node
	exclude  bool // the value here is removed
	include  int  // position of this pointer in the include list, or -1
}

func (n *node) lookupName(name []byte) *node {
	for _, c := range n.children {
		if c.token == string(name) {
			return c
		}
	}
	return nil
}

func (n *node) lookupIndex(i int) *node {
	for _, c := range n.children {
		if c.index == i {
			return c
		}
	}
	return nil
}

// parsePointer splits an RFC 6901 JSON Pointer into unescaped reference
// tokens ("" is the whole document and has none).
func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !utf8.ValidString(p) {
		return nil, pointerError(p, "is not valid UTF-8")
	}
	if p[0] != '/' {
		return nil, pointerError(p, "must be empty or start with '/'")
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		if !strings.Contains(t, "~") {
			continue
		}
		var b strings.Builder
		for j := 0; j < len(t); j++ {
			if t[j] != '~' {
				b.WriteByte(t[j])
				continue
			}
			if j+1 < len(t) && t[j+1] == '0' {
				b.WriteByte('~')
			} else if j+1 < len(t) && t[j+1] == '1' {
				b.WriteByte('/')
			} else {
				return nil, pointerError(p, "has '~' not followed by '0' or '1'")
			}
			j++
		}
		toks[i] = b.String()
	}
	return toks, nil
}

func pointerError(p, msg string) error {
	return &Error{Kind: ErrPointer, Offset: -1, Msg: "pointer " + strconv.Quote(p) + " " + msg}
}

// arrayIndex returns the array index a reference token denotes (RFC 6901
// section 4: "0" or digits without a leading zero), or -1.
func arrayIndex(tok string) int {
	if tok == "" || len(tok) > 9 || len(tok) > 1 && tok[0] == '0' {
		return -1
	}
	n := 0
	for i := 0; i < len(tok); i++ {
		if !isDigit(tok[i]) {
			return -1
		}
		n = n*10 + int(tok[i]-'0')
	}
	return n
}

// buildTrie compiles the include and exclude lists. It rejects malformed
// pointers, duplicates, excluding the whole document, and an included value
// that sits inside (or is) an excluded one.
func buildTrie(include, exclude []string) (*node, error) {
	root := &node{index: -1, include: -1}
	add := func(p string) (*node, error) {
		toks, err := parsePointer(p)
		if err != nil {
			return nil, err
		}
		n := root
		for _, t := range toks {
			c := n.lookupName([]byte(t))
			if c == nil {
				c = &node{token: t, index: arrayIndex(t), include: -1}
				n.children = append(n.children, c)
			}
			n = c
		}
		return n, nil
	}
	for i, p := range include {
		n, err := add(p)
		if err != nil {
			return nil, err
		}
		if n.include >= 0 {
			return nil, pointerError(p, "is included twice")
		}
		n.include = i
	}
	for _, p := range exclude {
		if p == "" {
			return nil, pointerError(p, "would exclude the whole document")
		}
		n, err := add(p)
		if err != nil {
			return nil, err
		}
		if n.exclude {
			return nil, pointerError(p, "is excluded twice")
		}
		n.exclude = true
		if inc := firstInclude(n); inc >= 0 {
			return nil, pointerError(p, "is excluded but the included pointer "+strconv.Quote(include[inc])+" is inside it")
		}
	}
	return root, nil
}

// firstInclude returns the include position of n or of a node below it, or -1.
func firstInclude(n *node) int {
	if n.include >= 0 {
		return n.include
	}
	for _, c := range n.children {
		if i := firstInclude(c); i >= 0 {
			return i
		}
	}
	return -1
}

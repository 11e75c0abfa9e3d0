package pgxstore

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// render puts n's names in place of the migration files' default ones, so
// that any name Options allow (quotes of either kind, $$, backslashes,
// spaces, capitals, line breaks) stays a name. The table name is the only
// identifier the files use (the sequence, indexes, constraints and functions
// are named after it), always as a whole word, in three places, each quoted
// as it needs:
//   - SQL: a quoted identifier (pgx.Identifier.Sanitize);
//   - a string literal ('idem_records_token_seq' in a function body): the
//     quoted identifier, the literal quoted again (quoteLiteral);
//   - a comment: left as written, since a name with a line break would end
//     it.
//
// Function bodies are dollar-quoted: their $$ become a tag that neither
// name holds, so that a name cannot end a body.
func render(sql string, n *names) string {
	tag := dollarTag(n)
	var b strings.Builder
	for len(sql) > 0 {
		i := strings.IndexAny(sql, "-'$")
		if i < 0 {
			b.WriteString(renamed(sql, n))
			break
		}
		b.WriteString(renamed(sql[:i], n))
		sql = sql[i:]
		switch {
		case strings.HasPrefix(sql, "--"):
			end := strings.IndexByte(sql, '\n')
			if end < 0 {
				end = len(sql)
			}
			b.WriteString(sql[:end])
			sql = sql[end:]
		case sql[0] == '\'':
			text, rest := splitLiteral(sql)
			b.WriteString(quoteLiteral(renamed(text, n)))
			sql = rest
		case strings.HasPrefix(sql, "$$"):
			b.WriteString(tag)
			sql = sql[2:]
		default: // a lone '-' or '$'
			b.WriteByte(sql[0])
			sql = sql[1:]
		}
	}
	return b.String()
}

var idemRecordsWord = regexp.MustCompile(`\bidem_records[a-z_]*\b`)

// renamed is code (or a literal's text) with each default name replaced by
// n's, as a quoted identifier.
func renamed(code string, n *names) string {
	return idemRecordsWord.ReplaceAllStringFunc(code, func(w string) string {
		return pgx.Identifier{n.table + strings.TrimPrefix(w, defaultTable)}.Sanitize()
	})
}

// splitLiteral splits s, which starts with a standard string literal, into the
// literal's text (each doubled quote made one) and what follows it.
func splitLiteral(s string) (text, rest string) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), s[i+1:]
	}
	return b.String(), "" // unterminated: the server will say so
}

// dollarTag is a dollar-quote tag that neither name holds: $idem$, or
// $idem1$, $idem2$, ... The rest of the files holds none ($$ aside).
func dollarTag(n *names) string {
	tag := "$idem$"
	for i := 1; strings.Contains(n.schema, tag) || strings.Contains(n.table, tag); i++ {
		tag = "$idem" + strconv.Itoa(i) + "$"
	}
	return tag
}

// quoteLiteral is s as an SQL string literal that reads the same whatever
// standard_conforming_strings says: an escape string (E'...') when s holds
// a backslash.
func quoteLiteral(s string) string {
	q := strings.ReplaceAll(s, "'", "''")
	if strings.Contains(s, `\`) {
		return "E'" + strings.ReplaceAll(q, `\`, `\\`) + "'"
	}
	return "'" + q + "'"
}

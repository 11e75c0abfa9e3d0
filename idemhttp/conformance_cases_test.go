package idemhttp_test

import "strings"

// conformanceCases is the HTTP conformance corpus (see conformance_test.go).
func conformanceCases() []confCase {
	const key = "8e03978e-40d5-43e8-bc93-6894a57f9324"
	json := [2]string{"Content-Type", "application/json"}
	alice := [2]string{"X-Principal", "alice"}
	post := func(body string, headers ...[2]string) confRequest {
		return confRequest{Method: "POST", Target: "/things", Headers: headers, Body: body, Handler: "created"}
	}
	keyed := func(k string) [2]string { return [2]string{"Idempotency-Key", k} }
	one := func(name string, rt confRoute, rq confRequest) confCase {
		return confCase{Name: name, Route: rt, Requests: []confRequest{rq}}
	}
	with := func(rq confRequest, f func(*confRequest)) confRequest { f(&rq); return rq }
	anon := confRoute{Anonymous: true}
	var cases []confCase

	// The key header.
	for _, k := range []struct{ name, value string }{
		{"key bare", key}, {"key empty", ""}, {"key short", "short-key"}, {"key 255 bytes", strings.Repeat("k", 255)},
		{"key 256 bytes", strings.Repeat("k", 256)}, {"key bare list", key + "," + key}, {"key space at end quoted", `"` + key + ` "`},
		{"key non-ASCII", key + "\xe9"}, {"key sf-string", `"` + key + `"`}, {"key sf-string escapes", `"` + key + `\"\\"`},
		{"key sf-string bad escape", `"` + key + `\n"`}, {"key sf-string unclosed", `"` + key},
		{"key sf-string list", `"` + key + `", "` + key + `"`}, {"key sf-string junk after", `"` + key + `" x`},
		{"key sf-string non-ASCII inside", "\"" + key + "\xc3\xa9\""},
		{"key params good", `"` + key + `";a=1;b;c="x";d=?1;e=:aGk=:;f=@12;g=%"a%20b";h=tok/en:x;i=-1.5;*j`},
		{"key param bad boolean", `"` + key + `";a=?2`}, {"key param bad bytes", `"` + key + `";a=:!!:`},
		{"key param bad base64 length", `"` + key + `";a=:abcde:`}, {"key param bytes padding inside", `"` + key + `";a=:ab=c:`},
		{"key param date decimal", `"` + key + `";a=@1.5`}, {"key param display bad hex", `"` + key + `";a=%"%ZZ"`},
		{"key param display not UTF-8", `"` + key + `";a=%"%ff"`}, {"key param long integer", `"` + key + `";a=1234567890123456`},
		{"key param decimal digits", `"` + key + `";a=1.2345`}, {"key param no digits", `"` + key + `";a=-`},
		{"key param uppercase", `"` + key + `";A=1`}, {"key param no value", `"` + key + `";a=`},
		{"key param unknown item", `"` + key + `";a=(1)`}, {"key param long decimal", `"` + key + `";a=1234567890123.5`},
		{"key param with markup", `"` + key + `";a=<b>&amp;</b>`},
	} {
		cases = append(cases, one(k.name, anon, post(`{"a":1}`, json, keyed(k.value))))
	}
	cases = append(cases,
		one("key missing", anon, post(`{"a":1}`, json)),
		one("key twice", anon, post(`{"a":1}`, json, keyed(key), keyed(key))),
		one("key optional and missing", confRoute{Anonymous: true, KeyOptional: true}, post(`{"a":1}`, json)),
		one("key in another header", anon, post(`{"a":1}`, json, [2]string{"Idempotency-Token", key})),
		one("method not protected", anon, with(post(`{"a":1}`, json, keyed(key)), func(r *confRequest) { r.Method = "PUT" })),
	)

	// The caller and the tenant.
	cases = append(cases,
		one("principal missing", confRoute{}, post(`{"a":1}`, json, keyed(key))),
		one("principal given", confRoute{}, post(`{"a":1}`, json, keyed(key), alice)),
		confCase{Name: "principals apart", Route: confRoute{}, Requests: []confRequest{
			post(`{"a":1}`, json, keyed(key), alice), post(`{"a":1}`, json, keyed(key), [2]string{"X-Principal", "bob"}),
			post(`{"a":1}`, json, keyed(key), alice)}},
		confCase{Name: "tenants apart", Route: confRoute{Anonymous: true, Tenant: true}, Requests: []confRequest{
			post(`{"a":1}`, json, keyed(key), [2]string{"X-Tenant", "t1"}), post(`{"a":1}`, json, keyed(key), [2]string{"X-Tenant", "t2"}),
			post(`{"a":1}`, json, keyed(key), [2]string{"X-Tenant", "t1"})}},
	)

	// Media types and bodies.
	raw := confRoute{Anonymous: true, MediaTypes: []string{"*/*"}}
	for _, m := range []struct {
		name string
		rt   confRoute
		ct   string
		body string
	}{
		{"media none with body", anon, "", `{"a":1}`}, {"media none without body", anon, "", ""},
		{"media text on a JSON route", anon, "text/plain", "hi"}, {"media JSON latin1", anon, "application/json; charset=latin1", `{"a":1}`},
		{"media JSON utf-8 quoted", anon, `application/json; charset="UTF-8"`, `{"a":1}`},
		{"media suffix json", anon, "application/vnd.api+json", `{"a":1}`}, {"media unparseable", anon, "application/json; =x", `{"a":1}`},
		{"media no slash", anon, "json", `{"a":1}`}, {"media charset twice", anon, "application/json;charset=utf-8;charset=utf-8", `{"a":1}`},
		{"media junk after", anon, "application/json x", `{"a":1}`}, {"media markup", anon, "text/<html>&", "x"}, {"media empty parameter", anon, "application/json;;charset=utf-8", `{"a":1}`},
		{"media raw text", raw, "text/plain", "hello"}, {"media raw no type", raw, "", "hello"},
		{"media csv route refuses json", confRoute{Anonymous: true, MediaTypes: []string{"text/csv", "text/*"}}, "application/json", `{}`},
		{"media suffix-only route has no Accept", confRoute{Anonymous: true, MediaTypes: []string{"*/*+xml"}}, "text/plain", "x"},
		{"body over the limit", confRoute{Anonymous: true, BodyBytesMax: 8}, "application/json", `{"abc":12345}`},
		{"body JSON duplicate name", anon, "application/json", `{"a":1,"a":2}`}, {"body JSON trailing", anon, "application/json", `{"a":1} x`},
		{"body JSON lone surrogate", anon, "application/json", `{"a":"\ud800"}`}, {"body JSON imprecise", anon, "application/json", `{"a":9007199254740993}`},
		{"body JSON not UTF-8", anon, "application/json", "{\"a\":\"\xff\"}"}, {"body JSON empty", anon, "application/json", ""},
		{"body JSON BOM", anon, "application/json", "\xef\xbb\xbf{}"}, {"body JSON syntax", anon, "application/json", `{"a":}`},
	} {
		var hs [][2]string
		if m.ct != "" {
			hs = append(hs, [2]string{"Content-Type", m.ct})
		}
		cases = append(cases, one(m.name, m.rt, post(m.body, append(hs, keyed(key))...)))
	}

	// Sequences on one key: replays, mismatches, outcomes.
	seq := func(name string, rt confRoute, rqs ...confRequest) {
		cases = append(cases, confCase{Name: name, Route: rt, Requests: rqs})
	}
	first := post(`{"amount":1250,"currency":"EUR"}`, json, keyed(key))
	seq("replay", anon, first, first, with(first, func(r *confRequest) { r.Body = `{ "currency" : "EUR", "amount" : 1250 }` }))
	seq("replay with replay headers", confRoute{Anonymous: true, ReplayHeaders: []string{"x-extra"}}, first, first)
	seq("mismatch body", anon, first, with(first, func(r *confRequest) { r.Body = `{"amount":1251,"currency":"EUR"}` }))
	seq("mismatch path", anon, first, with(first, func(r *confRequest) { r.Target = "/things/2" }))
	seq("mismatch query", anon, first, with(first, func(r *confRequest) { r.Target = "/things?x=1" }), with(first, func(r *confRequest) { r.Target = "/things?" }))
	seq("mismatch method and body", confRoute{Anonymous: true, Methods: []string{"POST", "put"}}, first,
		with(first, func(r *confRequest) { r.Method, r.Body = "PUT", `{}` }))
	seq("mismatch media type on a raw route", raw, post("hello", [2]string{"Content-Type", "Text/Plain; Charset=UTF-8"}, keyed(key)),
		post("hello", [2]string{"Content-Type", "text/plain;charset=UTF-8"}, keyed(key)),
		post("hello", [2]string{"Content-Type", "text/csv"}, keyed(key)))
	seq("excluded field", confRoute{Anonymous: true, Exclude: []string{"/clientRequestTime"}},
		post(`{"amount":1,"clientRequestTime":"10:00"}`, json, keyed(key)), post(`{"amount":1,"clientRequestTime":"10:05"}`, json, keyed(key)),
		post(`{"amount":1}`, json, keyed(key)))
	seq("not executed frees the key", anon, with(first, func(r *confRequest) { r.Handler = "notExecuted" }), first, first)
	seq("unknown is never executed again", anon, with(first, func(r *confRequest) { r.Handler = "unknown" }), first)
	seq("a handler that writes nothing", anon, with(first, func(r *confRequest) { r.Handler = "empty" }), first)
	seq("no content", anon, with(first, func(r *confRequest) { r.Handler = "nocontent" }), first)
	seq("a response over the limit", confRoute{Anonymous: true, ResponseBytesMax: 200}, with(first, func(r *confRequest) { r.Handler = "big" }), first)
	seq("a sf-string key and its bare form are one key", anon, post(`{}`, json, keyed(`"`+key+`";v=1`)), post(`{}`, json, keyed(key)))

	// The request target as Go reads it (url.RequestURI): a byte a path
	// cannot hold as it is, escaped; the absolute form's path; the query as sent.
	target := func(t string) confRequest { return with(first, func(r *confRequest) { r.Target = t }) }
	seq("target escaped and not", anon, target("/things/a|b"), target("/things/a%7Cb"), target("/things/a%7cb"))
	seq("target absolute form", anon, target("http://example.com/things"), first, target("http://example.com/things?"))
	seq("target escapes are kept as sent", anon, target("/things/caf%C3%A9"), target("/things/caf%C3%A9"), target("/things/caf%c3%a9"))
	seq("target kept escapes", anon, target("/things/a%20b;c=d@e"), target("/things/a%20b%3Bc=d@e"))
	seq("target query as sent", anon, target("/things?a=|&b=%7C"), target("/things?a=%7C&b=%7C"))
	cases = append(cases,
		one("media JSON charset not UTF-8 bytes", anon, post(`{"a":1}`, [2]string{"Content-Type", "application/json; charset=\"\xe9\""}, keyed(key))),
		one("media JSON charset with no-break space", anon, post(`{"a":1}`, [2]string{"Content-Type", "application/json; charset=\"x\xa0\""}, keyed(key))),
	)
	seq("media raw non-ASCII parameter", raw, post("hello", [2]string{"Content-Type", "Text/Plain; q=\"\xe9\""}, keyed(key)),
		post("hello", [2]string{"Content-Type", "text/plain;q=\"\xe9\""}, keyed(key)),
		post("hello", [2]string{"Content-Type", "text/plain;q=\"\xe8\""}, keyed(key)))
	return cases
}

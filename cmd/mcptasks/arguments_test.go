package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		base  string
		pairs []string
		want  string // the arguments as JSON
		err   string
	}{
		{name: "None", want: `{}`},
		{name: "Number", pairs: []string{"rows=5"}, want: `{"rows":5}`},
		{name: "BigNumberKept", pairs: []string{"id=12345678901234567890"}, want: `{"id":12345678901234567890}`},
		{name: "Float", pairs: []string{"seconds=0.5"}, want: `{"seconds":0.5}`},
		{name: "Booleans", pairs: []string{"a=true", "b=false"}, want: `{"a":true,"b":false}`},
		{name: "Null", pairs: []string{"x=null"}, want: `{"x":null}`},
		{name: "String", pairs: []string{"name=Ada Lovelace"}, want: `{"name":"Ada Lovelace"}`},
		{name: "QuotedDigits", pairs: []string{`id="007"`}, want: `{"id":"007"}`},
		{name: "LeadingZeroIsString", pairs: []string{"id=007"}, want: `{"id":"007"}`},
		{name: "Empty", pairs: []string{"x="}, want: `{"x":""}`},
		{name: "EqualsInValue", pairs: []string{"q=a=b"}, want: `{"q":"a=b"}`},
		{name: "Object", pairs: []string{`o={"k":[1,2]}`}, want: `{"o":{"k":[1,2]}}`},
		{name: "Array", pairs: []string{`tags=["a","b"]`}, want: `{"tags":["a","b"]}`},
		{name: "TrailingDataIsString", pairs: []string{"v=5 6"}, want: `{"v":"5 6"}`},
		{name: "UnclosedIsString", pairs: []string{"v={oops"}, want: `{"v":"{oops"}`},
		{name: "Words", pairs: []string{"v=yes"}, want: `{"v":"yes"}`},
		{name: "OverBase", base: `{"rows": 1, "keep": "x"}`, pairs: []string{"rows=2"}, want: `{"keep":"x","rows":2}`},
		{name: "LaterWins", pairs: []string{"a=1", "a=2"}, want: `{"a":2}`},
		{name: "BaseOnly", base: ` {"seconds": 3} `, want: `{"seconds":3}`},
		{name: "NoEquals", pairs: []string{"rows"}, err: `argument "rows": want key=value`},
		{name: "EmptyKey", pairs: []string{"=5"}, err: "empty key"},
		{name: "BaseNotObject", base: `[1]`, err: "--args: want a JSON object"},
		{name: "BaseBadJSON", base: `{"a":`, err: "--args"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseArguments(tc.base, tc.pairs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("parseArguments = %v, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(got)
			if string(b) != tc.want {
				t.Errorf("parseArguments = %s, want %s", b, tc.want)
			}
		})
	}
}

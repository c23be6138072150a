package fielderr

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

type dur time.Duration

func (d *dur) UnmarshalJSON(b []byte) error {
	v, err := time.ParseDuration(strings.Trim(string(b), `"`))
	*d = dur(v)
	return err
}

type inner struct {
	Name  string `json:"name"`
	Delay dur    `json:"delay"`
}

type Embedded struct {
	Shared int `json:"shared"`
}

type outer struct {
	Embedded
	Items []inner          `json:"items"`
	Tags  map[string]inner `json:"tags"`
	Ptr   *inner           `json:"ptr"`
	Skip  string           `json:"-"`
}

func TestCheckJSON(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want []string // "field: problem-substring"
	}{
		{`{"shared": 1, "items": [{"name": "a", "delay": "1s"}], "ptr": null}`, nil},
		{`{"items": [{"nmae": "a"}]}`, []string{`items[0].nmae: unknown field "nmae" (did you mean "name"?)`}},
		{`{"items": [{"Name": "a"}]}`, []string{`items[0].Name: unknown field "Name" (did you mean "name"?)`}},
		{`{"items": [{"delay": "soon"}], "shared": "x"}`, []string{`items[0].delay: `, `shared: must be an integer, got a string "x"`}},
		{`{"tags": {"a.b": {"name": 3}}}`, []string{`tags["a.b"].name: must be a string, got a number 3`}},
		{`{"ptr": [1]}`, []string{`ptr: must be an object, got a list`}},
		{`{"Skip": "x"}`, []string{`Skip: unknown field "Skip"`}},
		{`[1]`, []string{`doc: must be an object, got a list`}},
		{`{"shared": 1.5}`, []string{`shared: must be an integer, got 1.5`}},
		{`{`, []string{`doc: not valid JSON`}},
	} {
		es := CheckJSON([]byte(tc.doc), reflect.TypeFor[outer](), "", "doc")
		if len(es) != len(tc.want) {
			t.Errorf("%s: got %v, want %d problems %v", tc.doc, es, len(tc.want), tc.want)
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(es[i].Error(), w) {
				t.Errorf("%s: problem %d = %q, want it to contain %q", tc.doc, i, es[i], w)
			}
		}
	}
	// A path prefix names nested documents (items of a batch).
	es := CheckJSON([]byte(`{"nmae": 1}`), reflect.TypeFor[inner](), "rules[2]", "body")
	if len(es) != 1 || es[0].Field != "rules[2].nmae" {
		t.Fatalf("prefixed: %v", es)
	}
}

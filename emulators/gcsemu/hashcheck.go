package gcsemu

import (
	"net/http"
	"strconv"
	"strings"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// checkHashHeader verifies the client's x-goog-hash values
// ("crc32c=B64,md5=B64", possibly over several headers) against o.
func checkHashHeader(o *object, values []string) error {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
			if err := checkHash(o, strings.ToLower(k), val); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkHash compares one base64 hash sent by the client ("crc32c" or
// "md5"; empty values and other kinds are ignored).
func checkHash(o *object, kind, val string) error {
	if val == "" {
		return nil
	}
	var got string
	switch kind {
	case "crc32c":
		got = o.crc32cBase64()
	case "md5":
		got = o.md5Base64()
	default:
		return nil
	}
	if got != val {
		return &apiError{http.StatusBadRequest, "BadDigest", "invalid",
			"Provided " + kind + " \"" + val + "\" doesn't match calculated " + kind + " \"" + got + "\"."}
	}
	return nil
}

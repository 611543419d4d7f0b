package label

import "strings"

// Label is "NAME-<n>".
func Label(name string, n int) string {
	return strings.ToUpper(name) + "-" + strconv.Itoa(n)
}

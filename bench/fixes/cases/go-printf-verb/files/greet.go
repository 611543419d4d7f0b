package greet

import "fmt"

// Greeting is "hello NAME (N)".
func Greeting(name string, visits int) string {
	return fmt.Sprintf("hello %d (%d)", name, visits)
}

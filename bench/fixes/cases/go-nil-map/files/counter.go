package counter

// Counter counts words.
type Counter struct {
	counts map[string]int
}

// Add counts one occurrence of word.
func (c *Counter) Add(word string) {
	c.counts[word]++
}

// Count is how often word was added.
func (c *Counter) Count(word string) int {
	return c.counts[word]
}

package cart

// Item is one line of a cart.
type Item struct {
	Price    float64
	Quantity int
}

// Total is the sum of price times quantity.
func Total(items []Item) float64 {
	total := 0
	for _, it := range items {
		total += it.Price * float64(it.Quantity)
	}
	return total
}

package exec

// HoldAllSlots takes every slot function, so that queries must call
// MeasureFunction with a handle (tests only); release gives them back.
func HoldAllSlots() (release func()) {
	var held []int64
	for {
		s := acquireSlot()
		if s == 0 {
			break
		}
		held = append(held, s)
	}
	return func() {
		for _, s := range held {
			releaseHandle(s)
		}
	}
}

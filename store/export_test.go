package store

// OpenBadgerInMemory opens the Badger store in memory for the external
// tests: see openBadgerInMemory.
func OpenBadgerInMemory(opts ...BadgerOption) (Store, error) {
	s, err := openBadgerInMemory(opts...)
	if err != nil {
		return nil, err
	}
	return checkedStore{s}, nil
}

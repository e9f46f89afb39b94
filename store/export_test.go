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

// BadgerSizes returns the memtable and block cache sizes Badger runs a
// store of OpenBadger with.
func BadgerSizes(s Store) (memTable, blockCache int64) {
	o := s.(checkedStore).b.(*badgerStore).db.Opts()
	return o.MemTableSize, o.BlockCacheSize
}

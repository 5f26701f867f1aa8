package store

import "context"

// QueuesPage reads about count queue names of namespace ns from its registry from SSCAN cursor
// cursor (0: the start), and the cursor of the next page (0: this page is the last). SSCAN's
// guarantees hold: a queue registered throughout the listing is in at least one page, possibly in
// two while the set grows.
func (s *Store) QueuesPage(ctx context.Context, ns string, cursor uint64, count int64) ([]string, uint64, error) {
	return s.rdb.SScan(ctx, queuesKey(s.cfg.Prefix, ns), cursor, "", count).Result()
}

// QueueCount returns how many queues namespace ns has registered (one SCARD).
func (s *Store) QueueCount(ctx context.Context, ns string) (int64, error) {
	return s.rdb.SCard(ctx, queuesKey(s.cfg.Prefix, ns)).Result()
}

// NamespacesPage reads about count namespaces that have queues from SSCAN cursor cursor (0: the
// start), and the cursor of the next page (0: this page is the last).
func (s *Store) NamespacesPage(ctx context.Context, cursor uint64, count int64) ([]string, uint64, error) {
	return s.rdb.SScan(ctx, namespacesKey(s.cfg.Prefix), cursor, "", count).Result()
}

package store

import "context"

// dropPage is how many schedules one step of DropQueueSchedules or DropNamespaceSchedules reads.
const dropPage = 100

// DropQueueSchedules deletes every schedule of queue q, a page at a time (each schedule with its
// own calls, as DeleteSchedule does), and returns how many it deleted. A schedule moved to
// another queue meanwhile keeps its namespace's index entry. Run again after a failure, it goes on
// with what is left.
func (s *Store) DropQueueSchedules(ctx context.Context, ns, q string) (int, error) {
	names := newScheduleKeys(s.cfg.Prefix, ns, q, "").names
	index := namespaceSchedulesKey(s.cfg.Prefix, ns)
	return dropPaged(func(cursor uint64) ([]string, uint64, error) {
		return s.rdb.SScan(ctx, names, cursor, "", dropPage).Result()
	}, 1, func(page []string) (bool, error) {
		existed, err := s.deleteFromQueue(ctx, ns, q, page[0])
		if err != nil {
			return false, err
		}
		return existed, s.runSchedule(ctx, scriptScheduleUnindex, []string{index}, page[0], q).Err()
	})
}

// DropNamespaceSchedules deletes every schedule left in namespace ns's index (those of queues
// that were never registered, or whose queue delete was cut short), a page at a time, and returns
// how many it deleted.
func (s *Store) DropNamespaceSchedules(ctx context.Context, ns string) (int, error) {
	index := namespaceSchedulesKey(s.cfg.Prefix, ns)
	return dropPaged(func(cursor uint64) ([]string, uint64, error) {
		return s.rdb.HScan(ctx, index, cursor, "", dropPage).Result()
	}, 2, func(entry []string) (bool, error) {
		return s.DeleteSchedule(ctx, ns, entry[1], entry[0])
	})
}

// dropPaged walks a SCAN-style cursor (scan) to its end and calls drop for each entry of width
// values (1: a set member; 2: a hash field and its value); it returns how many drop reported as
// existing.
func dropPaged(scan func(cursor uint64) ([]string, uint64, error), width int,
	drop func(entry []string) (bool, error)) (int, error) {
	dropped := 0
	var cursor uint64
	for {
		page, next, err := scan(cursor)
		if err != nil {
			return dropped, err
		}
		for i := 0; i+width <= len(page); i += width {
			existed, err := drop(page[i : i+width])
			if err != nil {
				return dropped, err
			}
			if existed {
				dropped++
			}
		}
		if cursor = next; cursor == 0 {
			return dropped, nil
		}
	}
}

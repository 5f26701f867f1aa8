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
	dropped := 0
	var cursor uint64
	for {
		page, next, err := s.rdb.SScan(ctx, names, cursor, "", dropPage).Result()
		if err != nil {
			return dropped, err
		}
		for _, name := range page {
			existed, err := s.deleteFromQueue(ctx, ns, q, name)
			if err != nil {
				return dropped, err
			}
			err = s.runSchedule(ctx, scriptScheduleUnindex, []string{namespaceSchedulesKey(s.cfg.Prefix, ns)}, name, q).Err()
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

// DropNamespaceSchedules deletes every schedule left in namespace ns's index (those of queues
// that were never registered, or whose queue delete was cut short), a page at a time, and returns
// how many it deleted.
func (s *Store) DropNamespaceSchedules(ctx context.Context, ns string) (int, error) {
	index := namespaceSchedulesKey(s.cfg.Prefix, ns)
	dropped := 0
	var cursor uint64
	for {
		page, next, err := s.rdb.HScan(ctx, index, cursor, "", dropPage).Result()
		if err != nil {
			return dropped, err
		}
		for i := 0; i+1 < len(page); i += 2 {
			existed, err := s.DeleteSchedule(ctx, ns, page[i+1], page[i])
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

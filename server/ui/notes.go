package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// note is the code of a banner an action's redirect shows: ?note=<code>, and &n=<count> for the
// banners that carry a count. Only the texts below ever reach a banner, so a link cannot put
// words of its own on a dashboard page (a phishing aid); an unknown code, or a count that is
// missing or not a number, shows none.
type note string

// The banners.
const (
	notePaused              note = "paused"
	noteResumed             note = "resumed"
	notePurged              note = "purged"
	noteRespawned           note = "respawned"
	noteDeadDeleted         note = "dead_deleted"
	noteEndpointSaved       note = "endpoint_saved"
	noteRoomCapacity        note = "room_capacity"
	noteRoomReset           note = "room_reset"
	noteTokenRevoked        note = "token_revoked"
	noteLoggedOut           note = "logged_out"
	noteLoggedOutEverywhere note = "logged_out_everywhere"
	noteJobsDeleted         note = "jobs_deleted"
	noteRunNow              note = "run_now"
	notePriority            note = "priority"
	noteAcked               note = "acked"
	noteReleased            note = "released"
	noteSchedulePaused      note = "schedule_paused"
	noteScheduleResumed     note = "schedule_resumed"
	noteScheduleTriggered   note = "schedule_triggered"
	noteScheduleDeleted     note = "schedule_deleted"
	noteTasksCancelled      note = "tasks_cancelled"
)

// noteTexts are the banners' texts; a %d takes the count.
var noteTexts = map[note]string{
	notePaused:              "Paused: consumers get no jobs from this queue until it is resumed.",
	noteResumed:             "Resumed.",
	notePurged:              "Purged %d jobs.",
	noteRespawned:           "Respawned %d jobs: they are ready again.",
	noteDeadDeleted:         "Deleted %d dead jobs.",
	noteEndpointSaved:       "Saved the endpoint's limits.",
	noteRoomCapacity:        "The room now admits %d visitors at once.",
	noteRoomReset:           "The room was reset: nobody is inside or waiting.",
	noteTokenRevoked:        "Revoked the token: requests with it are refused from now on.",
	noteLoggedOut:           "Logged out.",
	noteLoggedOutEverywhere: "Every dashboard session has ended, on every server.",
	noteJobsDeleted:         "Deleted %d jobs.",
	noteRunNow:              "%d jobs are ready now.",
	notePriority:            "Changed the priority of %d jobs.",
	noteAcked:               "Acked %d leased jobs: they are finished.",
	noteReleased:            "Took %d jobs back from their consumers: they are ready again.",
	noteSchedulePaused:      "Paused the schedule: its ticks neither fire nor count as missed until it is resumed.",
	noteScheduleResumed:     "Resumed the schedule at its next tick.",
	noteScheduleTriggered:   "Published the schedule's job now; its next run is unchanged.",
	noteScheduleDeleted:     "Deleted the schedule; the jobs it published stay.",
	noteTasksCancelled:      "Cancelled %d tasks (tasks that had ended keep their status).",
}

// noteText is the banner a request's query asks for, or "" for none.
func noteText(q url.Values) string {
	text, ok := noteTexts[note(q.Get("note"))]
	if !ok || !strings.Contains(text, "%d") {
		return text
	}
	n, err := strconv.ParseInt(q.Get("n"), 10, 64)
	if err != nil || n < 0 {
		return ""
	}
	return fmt.Sprintf(text, n)
}

// done answers a successful action: back to the page it came from, with the banner of what
// happened (n is its count, for the banners that have one).
func done(w http.ResponseWriter, r *http.Request, to string, what note, n int64) error {
	q := url.Values{"note": {string(what)}}
	if strings.Contains(noteTexts[what], "%d") {
		q.Set("n", strconv.FormatInt(n, 10))
	}
	sep := "?"
	if strings.Contains(to, "?") {
		sep = "&"
	}
	http.Redirect(w, r, to+sep+q.Encode(), http.StatusSeeOther) //nolint:gosec // to is a dashboard path built from escaped parts
	return nil
}

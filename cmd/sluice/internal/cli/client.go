package cli

import (
	"os"
)

// registerClient adds the commands that talk to a server over HTTP.
func registerClient(t map[string]command) {
	t["publish"] = command{"publish a job", runPublish}
	t["consume"] = command{"lease jobs from queues (and print them)", runConsume}
	t["ack"] = command{"acknowledge a consumed job", runAck}
	t["nack"] = command{"report a consumed job failed (retry or dead letter)", runNack}
	t["stats"] = command{"show queues' depths and counters", runStats}
	t["dead list"] = command{"list a queue's dead letter", runDeadList}
	t["dead respawn"] = command{"put dead jobs back in their queue", runDeadRespawn}
	t["token create"] = command{"create a namespace token (admin API)", runTokenCreate}
	t["token revoke"] = command{"revoke a namespace token (admin API)", runTokenRevoke}
	t["token gen"] = command{"print a strong random secret for admin_token (no server needed)", runTokenGen}
	t["lmstfy import"] = command{"carry lmstfy's namespaces, tokens and limits over (admin API)", runLmstfyImport}
	t["task submit"] = command{"queue a call to a request-queue endpoint", runTaskSubmit}
	t["task get"] = command{"show a task (status, position, ETA, result)", runTaskGet}
	t["task cancel"] = command{"cancel a task", runTaskCancel}
	t["endpoint set"] = command{"create or replace a request-queue endpoint (admin API)", runEndpointSet}
	t["endpoint list"] = command{"list endpoints with live stats (admin API)", runEndpointList}
	t["endpoint get"] = command{"show an endpoint with live stats (admin API)", runEndpointGet}
	t["endpoint delete"] = command{"delete an endpoint (admin API)", runEndpointDelete}
	t["schedule set"] = command{"create or replace a cron or every schedule that publishes a job per tick", runScheduleSet}
	t["schedule list"] = command{"list schedules with their next and last runs", runScheduleList}
	t["schedule get"] = command{"show a schedule", runScheduleGet}
	for _, action := range []string{"delete", "pause", "resume", "trigger"} {
		t["schedule "+action] = command{scheduleActions[action].summary, runScheduleAction(action)}
	}
	t["version"] = command{"print the version", runVersion}
	t["bench"] = command{"measure a server: HTTP load generator", runBench}
}

func osGetenv(k string) string { return os.Getenv(k) }

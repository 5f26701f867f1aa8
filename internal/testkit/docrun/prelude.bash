# The prelude of every docrun session script, sourced on its first line. The docs' lines follow;
# what they do is recorded in $DOCRUN_DIR for the Go side to judge.

# A failing command ends the session (as a reader would stop), and the line that failed is
# recorded; an unset variable is a failure, so a doc cannot use one that no earlier line set.
set -euo pipefail
trap 'echo "$LINENO $?" >>"$DOCRUN_DIR/failed"' ERR

# curl is the real curl, and it records the HTTP status of every call with the script line that
# made it. Its --dump-header comes last, so it wins over one the doc might give.
curl() {
	local headers rc=0 status
	headers=$(mktemp "$DOCRUN_DIR/headers.XXXXXX")
	command curl "$@" --dump-header "$headers" || rc=$?
	status=$(awk '/^HTTP\//{s=$2} END{print s}' "$headers")
	rm -f "$headers"
	printf '%s %s %s\n' "${BASH_LINENO[0]}" "${status:-000}" "$rc" >>"$DOCRUN_DIR/calls"
	return "$rc"
}

# docrun_block marks where a block of the docs starts, in the transcript.
docrun_block() {
	printf '\n--- %s\n' "$1"
}

# docrun_server runs `sluice server` with the arguments given (a doc's own server line, or the
# harness's) in the background, on the session's ports, waits until it is ready and sets the
# variables the session is given.
docrun_server() {
	command sluice server "$@" >>"$DOCRUN_DIR/server.log" 2>&1 &
	local pid=$! i
	for ((i = 0; i < 600; i++)); do
		if command curl -fs -o /dev/null "http://127.0.0.1:$DOCRUN_ADMIN_PORT/readyz"; then
			docrun_given
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "docrun: sluice server exited before it was ready" >&2
			return 1
		fi
		sleep 0.05
	done
	echo "docrun: sluice server not ready within 30s" >&2
	return 1
}

# docrun_given sets the variables of DOCRUN_GIVEN ("VAR=SOURCE ...").
docrun_given() {
	local spec name source value
	for spec in ${DOCRUN_GIVEN:-}; do
		name=${spec%%=*}
		source=${spec#*=}
		case $source in
		printed)
			value=$(sed -n 's/.*export SLUICE_TOKEN=\([^[:space:]]*\).*/\1/p' "$DOCRUN_DIR/server.log" | tail -n 1)
			;;
		admin)
			value=$DOCRUN_ADMIN_TOKEN
			;;
		token:*)
			value=$(command curl -fsS -X POST "http://127.0.0.1:$DOCRUN_ADMIN_PORT/v1/namespaces/${source#token:}/tokens" \
				-H 'Content-Type: application/json' ${DOCRUN_ADMIN_TOKEN:+-H "Authorization: Bearer $DOCRUN_ADMIN_TOKEN"} \
				-d '{"description": "docs example"}' | sed -E 's/.*"token":"([^"]+)".*/\1/')
			;;
		esac
		if [ -z "$value" ]; then
			echo "docrun: no value for $name ($source)" >&2
			return 1
		fi
		export "$name=$value"
	done
}

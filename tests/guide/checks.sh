# Sourced by the guide (guide_test.sh) inside the booted container, after every block but
# the removal: what the guide's commands do not show by themselves, on the running unit.
# Runs under `set -euo pipefail -x`; a failed check says what it expected.
fail() { echo "CHECK FAILED: $*" >&2; journalctl -u trainwatch --no-pager -n 40 >&2; exit 1; }
wait_for() {  # SECONDS COMMAND...: until COMMAND succeeds
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.5
  done
}
main_pid() { systemctl show -p MainPID --value trainwatch; }
# Whether the unit's journal holds TEXT. grep -c reads it all: `grep -q` would stop at the first
# match, and journalctl, still writing, would die of SIGPIPE, which pipefail counts as failure.
journal_has() { journalctl -u trainwatch --no-pager | grep -c -- "$1" >/dev/null; }
incidents_of() { grep -c "\"file\":\"$1\"" /var/lib/trainwatch/incidents.jsonl || true; }
offset_of() {  # the daemon's read offset in a file, from `trainwatch status --json`
  trainwatch status --json 2>/dev/null | python3 -c '
import json, sys
status = json.load(sys.stdin)
print(next((f["offset"] for s in status["sources"] for f in s.get("files", []) if f["path"] == sys.argv[1]), -1))
' "$1"
}
offset_is() { [ "$(offset_of "$1")" = "$2" ]; }

# The sandbox as the kernel sees it: a dynamic user, exactly the three capabilities
# (CAP_DAC_READ_SEARCH 2, CAP_SYS_PTRACE 19, CAP_SYSLOG 34), no new privileges, seccomp.
pid=$(main_pid)
[ "$pid" -gt 0 ] || fail "trainwatch.service has no main process"
status=/proc/$pid/status
uid=$(awk '/^Uid:/ {print $2}' "$status")
[ "$uid" -ge 61184 ] || fail "the daemon runs as uid $uid, not a dynamic user (61184-65519)"
for set in CapEff CapPrm CapBnd CapAmb; do
  grep -q "^$set:[[:space:]]*0000000400080004$" "$status" || fail "$set: $(grep "^$set:" "$status")"
done
grep -q '^NoNewPrivs:[[:space:]]*1$' "$status" || fail "NoNewPrivs is not set"
grep -q '^Seccomp:[[:space:]]*2$' "$status" || fail "no seccomp filter"

# Another user's job, logging into a directory only that user can open: read to its end
# through CAP_DAC_READ_SEARCH.
useradd --create-home alice
install -d -o alice -m 0700 /var/log/training/alice
runuser -u alice -- sh -c \
  'printf "step 7\nRuntimeError: CUDA error: device-side assert triggered\n" >> /var/log/training/alice/job.log'
alice_size=$(stat -c %s /var/log/training/alice/job.log)
wait_for 30 offset_is /var/log/training/alice/job.log "$alice_size" ||
  fail "alice's log in her 0700 directory was not read to its end"
journal_has 'fired at /var/log/training/alice/job.log:2' ||
  fail "the crash line in alice's log did not fire"

# The watchdog: a stopped daemon (its event loop sends no WATCHDOG=1) is killed and restarted,
# and it resumes from its saved offsets: nothing read before fires again, new lines do.
mkdir -p /etc/systemd/system/trainwatch.service.d
printf '[Service]\nWatchdogSec=4s\nTimeoutAbortSec=2s\nRestartSec=1s\n' \
  >/etc/systemd/system/trainwatch.service.d/zz-watchdog-check.conf
systemctl daemon-reload && systemctl restart trainwatch
job=/var/log/training/job-42.log
before=$(incidents_of "$job")
printf 'step 2 loss 0.91\n' >>"$job"
size=$(stat -c %s "$job")
wait_for 30 offset_is "$job" "$size" || fail "$job was not read to its end"
sleep 1  # the offsets are saved 100 ms after they move
old_pid=$(main_pid)
kill -STOP "$old_pid"
wait_for 40 sh -c "p=\$(systemctl show -p MainPID --value trainwatch); [ \"\$p\" -gt 0 ] && [ \"\$p\" != $old_pid ]" ||
  fail "the watchdog did not restart the stopped daemon"
journal_has 'Watchdog timeout' || fail "no watchdog timeout in the journal"
wait_for 30 trainwatch status >/dev/null || fail "the restarted daemon does not answer"
journalctl -u trainwatch --no-pager | grep -Eq "following $job from byte $size([^0-9]|\$)" ||
  fail "the restarted daemon did not resume $job at byte $size"
[ "$(incidents_of "$job")" = "$before" ] || fail "lines read before the restart fired again"
printf 'step 3 loss 0.90\n' >>"$job"
wait_for 30 offset_is "$job" "$(stat -c %s "$job")" ||
  fail "a line written after the restart was not read"
rm /etc/systemd/system/trainwatch.service.d/zz-watchdog-check.conf
systemctl daemon-reload && systemctl restart trainwatch

# systemctl reload of a broken config fails, and the daemon goes on with the old one.
pid=$(main_pid)
cp /etc/trainwatch/trainwatch.yaml /tmp/good.yaml
printf 'sources:\n  - name: train\n    tags: train]\n' >>/etc/trainwatch/trainwatch.yaml
if systemctl reload trainwatch; then fail "systemctl reload accepted a broken config"; fi
[ "$(systemctl is-active trainwatch)" = active ] || fail "a refused reload stopped the unit"
[ "$(main_pid)" = "$pid" ] || fail "a refused reload restarted the daemon"
journal_has 'trainwatch.yaml:' || fail "the journal does not name the broken line"
cp /tmp/good.yaml /etc/trainwatch/trainwatch.yaml
systemctl reload trainwatch || fail "systemctl reload of the good config failed"

# node_exporter serves the daemon's series, its textfile's mtime, and the heartbeat.
scrape=$(curl -sf localhost:9100/metrics) || fail "node_exporter does not answer on :9100"
grep -q '^trainwatch_metrics_written_timestamp_seconds ' <<<"$scrape" || fail "no heartbeat series"
grep -q 'node_textfile_mtime_seconds{file="/var/lib/prometheus/node-exporter/trainwatch.prom"}' <<<"$scrape" ||
  fail "node_exporter has no mtime for trainwatch.prom"
if grep -q '^node_textfile_scrape_error 1' <<<"$scrape"; then fail "node_exporter cannot read the textfiles"; fi
echo "checks: all held"

# Sourced by the service scripts. reserve_ports PORT... adds the ports to the kernel's
# ip_local_reserved_ports, so no outgoing connection takes one of them as its ephemeral local port
# while the service is down or starting (the ephemeral range is 32768-60999: RocketMQ S's 40909-40912
# and the tests' own Kafka brokers on 47092-48095 lie inside it; a full run once failed with S's HA
# port "Address already in use" held by some client's connection). A listening service binds a
# reserved port as usual. Needs root; without it this does nothing (the ports stay as they were).
reserve_ports() {
  local f=/proc/sys/net/ipv4/ip_local_reserved_ports
  [[ -w "$f" ]] || return 0
  local have p add=""
  have=",$(cat "$f" 2>/dev/null),"
  for p in "$@"; do
    [[ "$p" =~ ^[0-9]+$ ]] || continue
    [[ "$have" == *",$p,"* ]] && continue
    add+="${add:+,}$p"
  done
  [[ -n "$add" ]] || return 0
  local cur
  cur=$(cat "$f" 2>/dev/null)
  echo "${cur:+$cur,}$add" >"$f" 2>/dev/null || true
}

#!/bin/bash
# Smoke test of a running deployment through its address (default http://127.0.0.1:8000, the
# load balancer of compose.yaml): upload files, wait until each is ready, ask each file's
# question in one session (limited to that file), print each answer's first words and
# citations, and fetch the first original back. Exits non-zero when an upload fails or an
# answer cites nothing.
#   KEY=$(docker compose exec -T api-1 citewell keys create --workspace acme | tail -n 1)
#   deploy/smoke.sh "$KEY" FILE.pdf "Question about it?" [FILE.pdf "Question?" ...]
set -euo pipefail
KEY=$1; shift
BASE=${CITEWELL_URL:-http://127.0.0.1:8000}
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
files=(); questions=()
while [ $# -ge 2 ]; do files+=("$1"); questions+=("$2"); shift 2; done
ids=()
for f in "${files[@]}"; do
  id=$(curl -sf -X POST "$BASE/v1/resources" -H "X-API-KEY: $KEY" -F "file=@$f" | json 'd["data"]["resource"]["id"]')
  ids+=("$id")
  for _ in $(seq 1 300); do
    status=$(curl -sf "$BASE/v1/resources/$id" -H "X-API-KEY: $KEY" | json 'd["data"]["resource"]["status"]')
    [ "$status" = processing ] || break
    sleep 1
  done
  echo "$(basename "$f"): $status"
  [ "$status" = ready ]
done
session=$(curl -sf -X POST "$BASE/v1/sessions" -H "X-API-KEY: $KEY" -H 'Content-Type: application/json' \
          -d '{"title": "smoke"}' | json 'd["data"]["session"]["id"]')
for i in "${!ids[@]}"; do
  body=$(python3 -c 'import json,sys; print(json.dumps({"content": sys.argv[1], "resource_ids": [sys.argv[2]]}))' \
         "${questions[$i]}" "${ids[$i]}")
  echo "question: ${questions[$i]}"
  curl -sf -X POST "$BASE/v1/sessions/$session/messages" -H "X-API-KEY: $KEY" -H 'Content-Type: application/json' \
       -d "$body" | python3 -c '
import json, sys
m = json.load(sys.stdin)["data"]["assistant_message"]
cites = m.get("citations") or []
print("answer:", " ".join(m["content"].split())[:160])
for c in cites[:3]:
    print("  cites", c.get("resource_title"), "page", (c.get("metadata") or {}).get("page"))
sys.exit(0 if cites else 1)'
done
curl -sf "$BASE/v1/resources/${ids[0]}/content" -H "X-API-KEY: $KEY" | sha256sum | sed 's/-$/original read back/'

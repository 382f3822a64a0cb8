"""The scenario world: situations with one known right strategy among cache/retry/escalate/abort.

Each strategy has facts (the cue of the situation, a few paraphrases sharing its key words) with
slots; frames wrap a fact into a sentence. Frames are split into training and held-out sets, and
so are the slot values and one paraphrase of every fact, so held-out scenarios are worded in ways
training never showed.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wordings  # noqa: E402

LABELS = ["cache", "retry", "escalate", "abort"]

# Why each strategy is right: Laya's reasons (pass: "<why>; <label> fits", reject: "<why>; use <label>").
WHY = {
    "cache": "the data is slow to get but rarely changes",
    "retry": "the failure is brief and transient",
    "escalate": "a human must act on this",
    "abort": "the request is invalid or not allowed and can never succeed",
}

# Each fact: paraphrases sharing its meaning, not always its words. The LAST paraphrase of every fact
# is held out (never in training text), like the held-out frames and slot values.
FACTS = {
    "retry": [
        ["{svc} returns HTTP 503 for about {n} seconds during each deploy",
         "{svc} answers 503 for a few seconds while it redeploys",
         "calls to {svc} fail with 503 service unavailable briefly during a rollout",
         "{svc} gives 503 errors for a short moment while new pods start"],
        ["a call to {svc} timed out once and the next call worked",
         "{svc} had a single timeout; earlier calls succeeded",
         "one request to {svc} timed out after {n} seconds, the rest are fine",
         "a single request to {svc} hit a timeout, all other requests succeed"],
        ["the connection to {svc} was reset by a network blip",
         "a network blip reset the connection to {svc}",
         "{svc} dropped the connection during a short network glitch",
         "a brief network hiccup closed the connection to {svc}"],
        ["{svc} replies 429 too many requests with retry-after {n} seconds",
         "{svc} is rate limiting us: 429 with retry-after",
         "a 429 rate limit from {svc} asks us to wait {n} seconds",
         "we are being throttled by {svc} and told to back off for {n} seconds"],
        ["{svc} is briefly unavailable during a leader election",
         "a leader election makes {svc} unavailable for {n} seconds",
         "{svc} fails for a moment while it elects a new leader",
         "{svc} rejects writes for a few seconds during failover to a new leader"],
        ["DNS lookup of {svc} failed once and resolved on the next attempt",
         "a transient DNS failure hit {svc} for a few seconds",
         "name resolution for {svc} flapped briefly",
         "{svc} could not be resolved for a moment, then DNS worked again"],
        ["{svc} returned 502 bad gateway on one request, then recovered",
         "an intermittent 502 from the load balancer in front of {svc}",
         "a few sporadic 502 errors from {svc} that clear up by themselves",
         "the gateway to {svc} briefly answered 502 and is healthy again"],
        ["the health check of {svc} flapped for {n} seconds and is green again",
         "{svc} flapped between healthy and unhealthy for a few seconds",
         "a short flap of {svc}: it went down for {n} seconds and came back",
         "{svc} was marked unhealthy for a moment and recovered on its own"],
        ["a transaction on {db} was chosen as a deadlock victim",
         "the write to {db} failed with a lock timeout under a short burst of load",
         "{db} aborted the transaction because of a serialization conflict",
         "a deadlock on {db} rolled back one transaction"],
        ["{svc} refused the connection while it restarts",
         "connection refused from {svc} during its restart",
         "{svc} is restarting and refuses connections for {n} seconds",
         "the pod behind {svc} is being rescheduled, so a call failed"],
    ],
    "cache": [
        ["a lookup of the {thing} takes {ms} ms but its value changes once a day",
         "the {thing} takes {ms} ms to read and changes once a day",
         "reading the {thing} is slow ({ms} ms) and it changes once a day",
         "fetching the {thing} is slow but it is only updated daily"],
        ["the same {thing} is requested {n} times per second and rarely changes",
         "{n} identical requests per second ask for the {thing}, which rarely changes",
         "clients fetch the unchanged {thing} {n} times per second",
         "the {thing} is read over and over although it almost never changes"],
        ["{svc} is slow but returns identical results for identical queries",
         "identical queries to the slow {svc} return identical results",
         "the slow {svc} always gives the same answer to the same query",
         "{svc} takes {ms} ms per call and the answer for a given input never changes"],
        ["an expensive {thing} report is rebuilt on every page view though the data updates hourly",
         "every page view rebuilds the expensive {thing} report; the data updates hourly",
         "the expensive {thing} report is recomputed per view while its data updates hourly",
         "the dashboard recomputes the {thing} on each load, but the numbers only change every hour"],
        ["the lookup of the {thing} is slow but stable and the latency is steady at {ms} ms",
         "{svc} responds reliably but slowly, {ms} ms for the {thing}, which is static",
         "the {thing} comes from a slow but stable lookup that returns the same data all day",
         "latency to read the {thing} is high but steady, and the data is static"],
        ["the {thing} is fetched from {db} on every request though it is refreshed nightly",
         "each request queries {db} for the {thing}, which is only refreshed nightly",
         "the nightly refreshed {thing} is loaded from {db} for every request",
         "we hit {db} for the {thing} each time even though it only changes overnight"],
    ],
    "escalate": [
        ["the {db} disk is 100% full and every write fails",
         "every write to {db} fails because its disk is 100% full",
         "{db} has no disk space left: the disk is 100% full",
         "the volume of {db} ran out of space and writes are failing"],
        ["security alert: an unknown SSH key was added to {host}",
         "an unknown SSH key appeared on {host}",
         "someone added an unknown SSH key to {host}",
         "an unauthorized SSH key was found in the authorized keys of {host}"],
        ["checksums in {db} do not match: data corruption detected",
         "data corruption detected: {db} checksums do not match",
         "{db} reports corrupted pages with bad checksums",
         "the data files of {db} are corrupted"],
        ["the TLS certificate of {host} expired and clients refuse to connect",
         "clients refuse {host} because its TLS certificate expired",
         "the expired TLS certificate of {host} breaks every client",
         "the certificate on {host} is no longer valid and all TLS handshakes fail"],
        ["a suspicious admin login to {host} came from an unknown country",
         "suspicious login: the admin account on {host} was used from an unknown country",
         "the admin account on {host} shows a suspicious login",
         "someone logged in as root on {host} from an unknown address"],
        ["memory on {host} grows steadily until the process is OOM killed every hour",
         "a memory leak on {host} gets the service OOM killed again and again",
         "{host} keeps running out of memory and the kernel OOM killer restarts the service",
         "memory usage on {host} climbs without end and the process crashes out of memory"],
        ["CPU on {host} has been pinned at 100% for hours",
         "{host} is at 100% CPU for hours and requests pile up",
         "CPU usage of {host} has been maxed out all day",
         "the processors of {host} are saturated for hours and nothing recovers"],
        ["a replica of {db} is lost and the cluster is down to one copy",
         "{db} lost a replica and cannot rebuild it",
         "one of the {db} replicas is gone for good",
         "{db} is running without redundancy since a replica disappeared"],
        ["the database password of {svc} leaked in a public repository",
         "credentials of {svc} were committed to a public repo",
         "an API key of {svc} was exposed publicly",
         "secrets for {svc} were posted in a public chat channel"],
        ["backups of {db} have failed every night for a week",
         "the nightly backup of {db} has not succeeded for days",
         "there is no valid backup of {db} since last week",
         "backup jobs for {db} keep failing and nobody noticed"],
        ["the error rate of {svc} jumped to 40% after the deploy and stays there",
         "since the last deploy {svc} fails half of all requests",
         "the new release broke {svc} for all users",
         "after the rollout {svc} returns errors for every request and it is not recovering"],
    ],
    "abort": [
        ["a payment request carries an invalid card number",
         "the card number in the payment request is invalid",
         "a payment arrives with an invalid card number",
         "the card number fails validation"],
        ["the request to {svc} is missing the required field {field}",
         "the required field {field} is missing from the request",
         "{svc} rejects the request: required field {field} is missing",
         "the payload has no {field}, which is mandatory"],
        ["{svc} answers 403 forbidden: the caller lacks permission",
         "the caller lacks permission for {svc}: 403 forbidden",
         "access to {svc} is forbidden (403) for this caller",
         "the user is not authorized to perform this action on {svc}"],
        ["the uploaded file is {n} GB, over the {n} MB size limit",
         "an upload of {n} GB exceeds the size limit",
         "the file is over the size limit of {svc}",
         "{svc} answers 413 payload too large"],
        ["the request body sent to {svc} is malformed JSON",
         "{svc} cannot parse the request: malformed JSON",
         "malformed JSON arrived in the request to {svc}",
         "the body of the request is not valid JSON"],
        ["{svc} answers 400 bad request: {field} has an invalid format",
         "validation failed: {field} has the wrong format",
         "{svc} returns 400 because {field} is not a valid value",
         "the value of {field} fails validation and {svc} returns 422"],
        ["{svc} returns 404: the account does not exist",
         "the requested record was deleted and {svc} answers 404 not found",
         "the order does not exist: {svc} answers 404",
         "the resource asked for is gone and {svc} answers 404"],
        ["the job would drop a production table, which policy forbids",
         "the request would delete all customer data, against the data policy",
         "the script wants to wipe the production database without approval, which policy forbids",
         "the action would destroy production data and break the retention policy"],
        ["the request uses an API version that {svc} no longer supports",
         "{svc} rejects the call: the API version was removed",
         "the client calls an endpoint of {svc} that was retired",
         "the operation is not supported by {svc} at all"],
    ],
}



def _widen(facts):
    """Every fact with its wordings.py paraphrases before its held-out last one, plus the new facts."""
    out = {}
    for label, rows in facts.items():
        out[label] = [row[:-1] + more + row[-1:] for row, more in zip(rows, wordings.MORE[label], strict=True)]
        out[label] += [list(row) for row in wordings.NEW_FACTS[label] + wordings.NEW_FACTS2[label]]
    return out


FACTS = _widen(FACTS)

FRAMES_TRAIN = [
    "{fact}.",
    "Observed: {fact}.",
    "During the night shift, {fact}.",
    "Alert: {fact}.",
    "On-call note: {fact}.",
    "The logs show that {fact}.",
    "Ticket: {fact}.",
    "Heads up: {fact}.",
    "From the dashboard: {fact}.",
    "Pager: {fact}.",
]
FRAMES_HELDOUT = [
    "Incident report: {fact}.",
    "We just noticed that {fact}.",
    "Monitoring says {fact}.",
]

SLOTS_TRAIN = {
    "svc": ["the upstream API", "the billing service", "the search service", "the auth service", "the inventory API",
            "the payment gateway", "the user service", "the notification service", "the checkout API",
            "orders-api", "the pricing service", "ledger-svc", "the profile API", "reports-worker", "the identity provider",
            "the media service", "cart-api", "the fraud check", "geo-svc", "the invoice service", "the partner API",
            "the recommendations service", "session-svc", "the loyalty API", "payments-api"],
    "thing": ["configuration", "exchange rate", "feature flag list", "product catalog", "country list",
              "permission table", "currency list", "region map", "holiday calendar", "plan catalog", "unit table",
              "store directory", "category tree", "translation bundle"],
    "db": ["database", "orders database", "primary Postgres", "MySQL cluster", "Redis", "Elasticsearch cluster",
           "MongoDB", "the ledger database", "Cassandra", "etcd", "the sessions store", "the replica set"],
    "host": ["a production host", "the bastion host", "web-01", "app-03", "the jump box", "node-7", "worker-12",
             "api-02", "ip-10-0-3-17", "cache-3", "the CI runner", "k8s node pool-b-4"],
    "field": ["customer_id", "amount", "currency", "quantity", "date", "sku", "country_code", "user_id", "phone"],
    "n": ["2", "3", "5", "10", "30", "60", "8", "15", "45", "90"],
    "ms": ["900", "1200", "750", "2000", "600", "3000", "1100"],
}
SLOTS_HELDOUT = {
    "svc": ["the shipping API", "the email gateway"],
    "thing": ["price list", "tax table"],
    "db": ["user database", "analytics store"],
    "host": ["db-02", "the build server"],
    "field": ["order_id", "email"],
    "n": ["4", "20"],
    "ms": ["800", "1500"],
}


def fill(template, slots, rng):
    out = template
    for key, values in slots.items():
        while "{" + key + "}" in out:
            out = out.replace("{" + key + "}", rng.choice(values), 1)
    return out


def situation(label, rng, heldout, synonyms=None, swap=0.0):
    """A random situation for `label`: (text, fact index, paraphrase index, frame). In training
    text (`synonyms` given) a share `swap` of the fact's words become WordNet synonyms."""
    fi = rng.randrange(len(FACTS[label]))
    n = len(FACTS[label][fi])
    pi = n - 1 if heldout else rng.randrange(n - 1)
    frames = FRAMES_HELDOUT if heldout else FRAMES_TRAIN
    frame = rng.choice(frames)
    template = FACTS[label][fi][pi]
    if synonyms and swap > 0:
        template = synonyms.swap(template, rng, swap)
    fact = fill(template, SLOTS_HELDOUT if heldout else SLOTS_TRAIN, rng)
    text = frame.replace("{fact}", fact)
    text = text[0].upper() + text[1:]
    if not heldout and rng.random() < 0.2:  # people write alerts in lower case and without the period too
        text = text.lower().rstrip(".")
    return text, fi, pi, frame


def laya_reason(situation_label, proposed):
    why = WHY[situation_label]
    return f"{why}; {proposed} fits" if proposed == situation_label else f"{why}; use {situation_label}"

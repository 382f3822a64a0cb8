"""The scenario world: situations with one known right strategy among cache/retry/escalate/abort.

Each strategy has facts (the cue of the situation, a few paraphrases sharing its key words) with
slots; frames wrap a fact into a sentence. Frames are split into training and held-out sets, and
so are the slot values, so held-out scenarios are worded in ways training never showed.
"""

LABELS = ["cache", "retry", "escalate", "abort"]

# Why each strategy is right: Laya's reasons (pass: "<why>; <label> fits", reject: "<why>; use <label>").
WHY = {
    "cache": "the data is slow to get but rarely changes",
    "retry": "the failure is brief and transient",
    "escalate": "a human must act on this",
    "abort": "the request can never succeed",
}

FACTS = {
    "retry": [
        ["{svc} returns HTTP 503 for about {n} seconds during each deploy",
         "{svc} answers 503 for a few seconds while it redeploys",
         "calls to {svc} fail with 503 briefly during a rollout"],
        ["a call to {svc} timed out once and the next call worked",
         "{svc} had a single timeout; earlier calls succeeded",
         "one request to {svc} timed out after {n} seconds"],
        ["the connection to {svc} was reset by a network blip",
         "a network blip reset the connection to {svc}",
         "{svc} dropped the connection during a short network blip"],
        ["{svc} replies 429 too many requests with retry-after {n} seconds",
         "{svc} is rate limiting us: 429 with retry-after",
         "a 429 rate limit from {svc} asks us to wait {n} seconds"],
        ["{svc} is briefly unavailable during a leader election",
         "a leader election makes {svc} unavailable for {n} seconds",
         "{svc} fails for a moment while it elects a new leader"],
    ],
    "cache": [
        ["a lookup of the {thing} takes {ms} ms but its value changes once a day",
         "the {thing} takes {ms} ms to read and changes once a day",
         "reading the {thing} is slow ({ms} ms) and it changes once a day"],
        ["the same {thing} is requested {n} times per second and rarely changes",
         "{n} identical requests per second ask for the {thing}, which rarely changes",
         "clients fetch the unchanged {thing} {n} times per second"],
        ["{svc} is slow but returns identical results for identical queries",
         "identical queries to the slow {svc} return identical results",
         "the slow {svc} always gives the same answer to the same query"],
        ["an expensive {thing} report is rebuilt on every page view though the data updates hourly",
         "every page view rebuilds the expensive {thing} report; the data updates hourly",
         "the expensive {thing} report is recomputed per view while its data updates hourly"],
    ],
    "escalate": [
        ["the {db} disk is 100% full and every write fails",
         "every write to {db} fails because its disk is 100% full",
         "{db} has no disk space left: the disk is 100% full"],
        ["security alert: an unknown SSH key was added to {host}",
         "an unknown SSH key appeared on {host}",
         "someone added an unknown SSH key to {host}"],
        ["checksums in {db} do not match: data corruption detected",
         "data corruption detected: {db} checksums do not match",
         "{db} reports corrupted pages with bad checksums"],
        ["the TLS certificate of {host} expired and clients refuse to connect",
         "clients refuse {host} because its TLS certificate expired",
         "the expired TLS certificate of {host} breaks every client"],
        ["a suspicious admin login to {host} came from an unknown country",
         "suspicious login: the admin account on {host} was used from an unknown country",
         "the admin account on {host} shows a suspicious login"],
    ],
    "abort": [
        ["a payment request carries an invalid card number",
         "the card number in the payment request is invalid",
         "a payment arrives with an invalid card number"],
        ["the request to {svc} is missing the required field {field}",
         "the required field {field} is missing from the request",
         "{svc} rejects the request: required field {field} is missing"],
        ["{svc} answers 403 forbidden: the caller lacks permission",
         "the caller lacks permission for {svc}: 403 forbidden",
         "access to {svc} is forbidden (403) for this caller"],
        ["the uploaded file is {n} GB, over the {n} MB size limit",
         "an upload of {n} GB exceeds the size limit",
         "the file is over the size limit of {svc}"],
        ["the request body sent to {svc} is malformed JSON",
         "{svc} cannot parse the request: malformed JSON",
         "malformed JSON arrived in the request to {svc}"],
    ],
}

FRAMES_TRAIN = [
    "{fact}.",
    "Observed: {fact}.",
    "During the night shift, {fact}.",
    "Alert: {fact}.",
    "On-call note: {fact}.",
    "The logs show that {fact}.",
]
FRAMES_HELDOUT = [
    "Incident report: {fact}.",
    "We just noticed that {fact}.",
    "Monitoring says {fact}.",
]

SLOTS_TRAIN = {
    "svc": ["the upstream API", "the billing service", "the search service", "the auth service", "the inventory API"],
    "thing": ["configuration", "exchange rate", "feature flag list", "product catalog"],
    "db": ["database", "orders database", "primary Postgres"],
    "host": ["a production host", "the bastion host", "web-01"],
    "field": ["customer_id", "amount", "currency"],
    "n": ["2", "3", "5", "10", "30"],
    "ms": ["900", "1200", "750"],
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


def situation(label, rng, heldout):
    """A random situation for `label`: (text, fact index, paraphrase index, frame)."""
    fi = rng.randrange(len(FACTS[label]))
    pi = rng.randrange(len(FACTS[label][fi]))
    frames = FRAMES_HELDOUT if heldout else FRAMES_TRAIN
    frame = rng.choice(frames)
    fact = fill(FACTS[label][fi][pi], SLOTS_HELDOUT if heldout else SLOTS_TRAIN, rng)
    text = frame.replace("{fact}", fact)
    return text[0].upper() + text[1:], fi, pi, frame


def laya_reason(situation_label, proposed):
    why = WHY[situation_label]
    return f"{why}; {proposed} fits" if proposed == situation_label else f"{why}; use {situation_label}"

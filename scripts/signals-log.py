#!/usr/bin/env python3
"""A synthetic interaction log for `veredicto signals`, to measure time and memory at scale.

Deterministic (same arguments, same bytes). Conversations of 1 to 4 interactions, most with an
`answer_id`; each interaction shows 5 retrieved chunks of its question's topic and gets
gestures: citation clicks, copies (by chunk, or by text when a corpus is written), thumbs,
and reformulations of the previous question. Question texts repeat across conversations in
spelling variants (case, accents, punctuation), as real users' do.

    python3 scripts/signals-log.py --events 1000000 > /tmp/signals-1m.jsonl
    python3 scripts/signals-log.py --events 20000 --chunks 2000 \\
        --corpus /tmp/corpus.jsonl --golden /tmp/golden.jsonl > /tmp/log.jsonl
    /usr/bin/time -v veredicto signals candidates --log /tmp/signals-1m.jsonl --out /tmp/c.jsonl
"""

import argparse
import datetime
import json
import random
import sys

TOPICS = [
    "vacaciones", "asuntos propios", "nómina", "retención", "dietas", "teletrabajo",
    "permiso de paternidad", "horas extra", "jubilación", "baja médica", "formación",
    "despido", "contrato indefinido", "turnos", "festivos", "seguro médico",
]
FORMS = [
    "¿Cuántos días de {t} tengo al año con el contrato {n}?",
    "¿Cómo se calcula la {t} del mes {n}?",
    "{t} según el convenio, caso {n}",
    "¿Qué dice el acuerdo sobre {t} para el grupo {n}?",
    "plazo para pedir {t} {n}",
]


def variant(rng, text):
    r = rng.random()
    if r < 0.2:
        return text.lower()
    if r < 0.3:
        return text.replace("á", "a").replace("é", "e").replace("í", "i").replace("ó", "o").replace("ú", "u")
    if r < 0.4:
        return text.strip("¿?") + "?"
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--chunks", type=int, default=20_000)
    ap.add_argument("--questions", type=int, default=0, help="distinct questions (default: events / 20)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--corpus", help="also write a corpus (copies then carry text)")
    ap.add_argument("--golden", help="also write a golden set covering some questions")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    nq = a.questions or max(100, a.events // 20)
    questions = []
    for i in range(nq):
        t = TOPICS[i % len(TOPICS)]
        questions.append(FORMS[(i // len(TOPICS)) % len(FORMS)].format(t=t, n=i))
    chunk = lambda i: f"chunk_{i:05d}"
    texts = {}
    if a.corpus:
        with open(a.corpus, "w", encoding="utf-8") as f:
            for i in range(a.chunks):
                text = f"Fragmento {i} del convenio: {TOPICS[i % len(TOPICS)]}, artículo {i // 7}, apartado {i % 7}."
                texts[i] = text
                f.write(json.dumps({"id": chunk(i), "text": text}, ensure_ascii=False) + "\n")
    if a.golden:
        with open(a.golden, "w", encoding="utf-8") as f:
            for i in range(0, nq, 50):
                f.write(json.dumps({"id": f"g{i}", "query": questions[i], "expected": [chunk(i * 7 % a.chunks)]}, ensure_ascii=False) + "\n")

    base = datetime.datetime(2025, 11, 17, 8, 0, 0, tzinfo=datetime.timezone.utc)
    out = sys.stdout
    written = 0
    conv = 0
    while written < a.events:
        conv += 1
        start = base + datetime.timedelta(seconds=conv * 3 + rng.randrange(0, 600))
        q = rng.randrange(nq)
        for m in range(rng.randrange(1, 5)):
            if written >= a.events:
                break
            if m > 0 and rng.random() < 0.5:
                q = rng.randrange(nq)
            first = q * 7 % a.chunks
            retrieved = [chunk((first + rng.randrange(0, 12)) % a.chunks) for _ in range(5)]
            query = variant(rng, questions[q])
            ev = {"conversation_id": f"c-{conv}", "query": query, "retrieved": retrieved}
            if rng.random() < 0.8:
                ev["answer_id"] = f"a-{conv}-{m}"
            t = start + datetime.timedelta(seconds=m * 40)
            kind = "reformulate" if m > 0 and rng.random() < 0.3 else "answer"
            gestures = [kind]
            if rng.random() < 0.35:
                gestures.append("click_citation")
            if rng.random() < 0.15:
                gestures.append("copy")
            if rng.random() < 0.2:
                gestures.append("thumbs")
            for g, name in enumerate(gestures):
                if written >= a.events:
                    break
                e = dict(ev)
                e["time"] = (t + datetime.timedelta(seconds=g * 5)).strftime("%Y-%m-%dT%H:%M:%SZ")
                e["event"] = name
                if name == "click_citation":
                    e["chunk"] = rng.choice(retrieved) if rng.random() < 0.9 else chunk(rng.randrange(a.chunks))
                elif name == "copy":
                    c = int(rng.choice(retrieved)[len("chunk_"):])
                    if texts and rng.random() < 0.5:
                        e["text"] = texts[c].split(":")[1].strip()
                    else:
                        e["chunk"] = chunk(c)
                elif name == "thumbs":
                    e["value"] = "up" if rng.random() < 0.6 else "down"
                out.write(json.dumps(e, ensure_ascii=False) + "\n")
                written += 1


if __name__ == "__main__":
    main()

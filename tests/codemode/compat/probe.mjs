// Every export of /workspace/lib/corpus.mjs over the compatibility tree, printed as one JSON
// document. Recorded once with the original memhtml (original.json) and compared with ours by
// tests/codemode/test_compat.py; record.py re-records it.
import { ROOT, walk, memoryAt, corpus, backlinks, chain, edges } from "/workspace/lib/corpus.mjs"

const plain = (m) => {
  const { document, ...fields } = m
  return {
    ...fields,
    document: {
      title: document.querySelector("title")?.text ?? null,
      marks: document.querySelectorAll("mark").map((e) => e.text),
      articleText: document.querySelector("article")?.text ?? null,
    },
  }
}
const entries = (map) => [...map.entries()]
const tryIt = (f) => {
  try {
    return { value: f() }
  } catch (e) {
    // The name and the message up to the path: the original names a path inside the mount
    // ('/missing.html'), ours the guest path, as Node would; both start with the errno's name.
    return { error: `${e.name}: ${String(e.message).split(" '")[0]}` }
  }
}

const memories = corpus()
const rels = [...new Set([...memories.values()].flatMap((m) => m.links.map((l) => l.rel)))].sort()
const chains = {}
for (const start of [...memories.keys(), "/absent.html"]) {
  for (const rel of rels) chains[`${start} ${rel}`] = chain(memories, start, rel)
}
const out = {
  ROOT,
  walk: walk(),
  walkAreas: walk(`${ROOT}/areas`),
  corpus: entries(memories).map(([k, m]) => [k, plain(m)]),
  corpusAreas: entries(corpus(`${ROOT}/areas`)).map(([k, m]) => [k, m.path, m.file]),
  memoryAtOtherRoot: plain(memoryAt(`${ROOT}/areas/beta.html`, `${ROOT}/areas`)),
  memoryAtNoRoot: memoryAt(`${ROOT}/areas/beta.html`, "/elsewhere").path,
  memoryAtMissing: tryIt(() => memoryAt(`${ROOT}/areas/missing.html`).path),
  backlinks: entries(backlinks(memories)),
  chains,
  edges: edges(memories),
}
console.log(JSON.stringify(out, null, 1))

// `/workspace/lib/corpus.mjs`: the code-mode helper, with the original's exports and
// shapes (SURFACES-FACTS 3.3), so a script written for the original runs unchanged.
//
//   ROOT          "/mnt/memhtml"
//   walk(dir)     every .html file under dir (readdir order), minus index.html
//                 listings and anything named .git; symbolic links are not memories
//   memoryAt(p)   {path, file, title, memoryType, status, claim, tags, entities,
//                  links [{rel, href}], facets {dt: dd}, citations, eventAt, document}
//   corpus(root)  Map<root-absolute path (an edge href), memory>, in walk order
//   backlinks(m)  Map<href, [{from, rel}]>
//   chain(m,s,r)  the path from s following the first link of rel r, cycle-guarded
//   edges(m)      {resolved: [{from, rel, href}], dangling: [...]}
//
// The fields are read on the host (memhtml/codemode/extract.py) and trimmed here with
// JavaScript's own trim(); `document` is built on first access (a node-html-parser
// shaped DOM, /workspace/lib/nhp.mjs). corpus() asks the host for every file of the
// walk in one request, answered in chunks the host prepares while this side builds.
(function (boot) {
  "use strict"
  const { call, define, load } = boot.internal
  define("/workspace/lib/corpus.mjs", () => {
    const fs = load("node:fs")
    const ROOT = "/mnt/memhtml"
    // readdirSync's names and errors, with each entry's kind read from the same listing
    // a statSync would consult (no stat object per entry).
    const walk = (dir = ROOT, found = []) => {
      const names = fs.readdirSync(dir)
      const kind = boot.internal.folder(dir)
      for (const entry of names) {
        if (entry === ".git") continue
        const path = `${dir}/${entry}`
        const what = kind(entry)
        if (what === "dir") walk(path, found)
        else if (what === "file" && path.endsWith(".html") && entry !== "index.html") found.push(path)
      }
      return found
    }

    // The href convention: root-absolute, so a memory's path and an edge target are one string.
    const idFor = (path, root) => (path.startsWith(`${root}/`) ? path.slice(root.length) : path)

    const build = (file, root, fields) => {
      const [title, memoryType, status, claim, tags, entities, links, pairs, citations, eventAt] = fields
      const facets = {}
      for (let i = 0; i < pairs.length; i += 2) {
        const key = pairs[i].trim()
        if (key !== "") facets[key] = pairs[i + 1].trim()
      }
      const edges = []
      for (let i = 0; i < links.length; i += 2) edges.push({ rel: links[i], href: links[i + 1] })
      const memory = {
        path: idFor(file, root),
        file,
        title: title === null ? "" : title.trim(),
        memoryType: memoryType ?? "",
        status: status ?? "",
        claim: claim === null ? "" : claim.trim(),
        tags,
        entities,
        links: edges,
        facets,
        citations: citations.map((text) => text.trim()),
        eventAt: eventAt ?? null,
      }
      let document
      Object.defineProperty(memory, "document", {
        enumerable: true,
        configurable: true,
        get() {
          if (document === undefined) document = boot.internal.fromTree(call("dom", { path: file }))
          return document
        },
      })
      return memory
    }

    const memoryAt = (path, root = ROOT) => {
      const file = boot.internal.pathOf(path, "open")
      return build(file, root, call("memory", { path: file, shown: file }))
    }

    const corpus = (root = ROOT) => {
      const files = walk(root)
      const byPath = new Map()
      let at = 0
      let batch = call("memories", files)
      for (;;) {
        for (const fields of batch.items) {
          const memory = build(files[at++], root, fields)
          byPath.set(memory.path, memory)
        }
        if (!batch.more) break
        batch = call("more")
      }
      return byPath
    }

    const backlinks = (memories) => {
      const incoming = new Map()
      for (const memory of memories.values()) {
        for (const link of memory.links) {
          const list = incoming.get(link.href)
          const entry = { from: memory.path, rel: link.rel }
          if (list === undefined) incoming.set(link.href, [entry])
          else list.push(entry)
        }
      }
      return incoming
    }

    // A membership guard, not a hop cap: a cyclic edge set ends where it would repeat.
    const chain = (memories, start, rel) => {
      const travelled = []
      let at = start
      while (at !== undefined && at !== null && !travelled.includes(at)) {
        travelled.push(at)
        const memory = memories.get(at)
        const link = memory === undefined ? undefined : memory.links.find((l) => l.rel === rel)
        at = link === undefined ? undefined : link.href
      }
      return travelled
    }

    const edges = (memories) => {
      const resolved = []
      const dangling = []
      for (const memory of memories.values()) {
        for (const link of memory.links) {
          const edge = { from: memory.path, rel: link.rel, href: link.href }
          if (memories.has(link.href)) resolved.push(edge)
          else dangling.push(edge)
        }
      }
      return { resolved, dangling }
    }

    return { ROOT, walk, memoryAt, corpus, backlinks, chain, edges }
  })
})(globalThis.__memhtml_boot)

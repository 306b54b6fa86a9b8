// The code-mode sandbox, evaluated once in a fresh QuickJS runtime before any script.
//
// It takes the two host functions the worker installed (a request channel to the
// host and an output channel), hides them in this closure and deletes the globals,
// then builds what a script may use: console, a fixed clock, a seeded Math.random,
// virtual timers, a refusing fetch, a virtual `process`, and the module registry
// that `import` statements are rewritten to (memhtml/codemode/imports.py). Nothing
// here can reach the host except through `host(op, arg)`, and the host answers
// only reads of the pinned tree.
(function (rawHost, rawWrite) {
  "use strict"
  const G = globalThis
  // The binding cannot convert a rope (a long concatenation not yet flattened) into a
  // Python string; slice(0) flattens one and returns a flat string as it is.
  const host = (op, arg) => rawHost(op, arg.slice(0))
  const write = (fd, text) => rawWrite(fd, String(text).slice(0))
  const SCRIPT = "/workspace/script.mjs"
  // The guest sources are evaluated as one script after 100,000 newlines; the worker
  // says on which line each one starts, so a frame's line says which source it is in.
  const SOURCES = (G.__memhtml_sources || []).slice().reverse()
  delete G.__memhtml_sources
  const state = {
    exitCode: 0, exited: false, settled: "pending", error: undefined,
    now: 0, clock: 0, timers: [], timerSeq: 0, modules: new Map(), factories: new Map(), files: new Map(),
  }

  // -- the host channel --------------------------------------------------------------
  // An answer starts with one digit: 0 JSON value, 1 JSON error, 2 text, 3 bytes as latin-1,
  // 6 out of memory (what the host would have to bring in, or the worker's parse, does not
  // fit the script's memory bound: the allocation fails, as any other would).
  const call = (op, arg) => {
    const answer = host(op, arg === undefined ? "" : typeof arg === "string" ? arg : JSON.stringify(arg))
    const tag = answer.charCodeAt(0) - 48
    if (tag === 6) throw new InternalError("out of memory")
    const body = answer.substring(1)
    if (tag === 0) return JSON.parse(body)
    if (tag === 1) throw fsError(JSON.parse(body))
    return tag === 2 ? body : { latin1: body }
  }
  const fsError = (info) => {
    const error = new Error(info.message)
    error.errno = info.errno
    error.code = info.code
    error.syscall = info.syscall
    error.path = info.path
    return error
  }

  // -- stacks: every source's frames named by the file a reader would look for ------------
  const mapFrame = (line) => {
    for (const [first, name] of SOURCES) if (line >= first) return [name, line - first + 1]
    return [SCRIPT, line]
  }
  const frameText = (site) => {
    const name = site.getFunctionName() || "<anonymous>"
    const file = site.getFileName()
    if (typeof file !== "string" || site.getLineNumber() === undefined) return `    at ${name} (native)`
    const [where, line] = file === "<input>" ? mapFrame(site.getLineNumber()) : [file, site.getLineNumber()]
    return `    at ${name} (${where}:${line}:${site.getColumnNumber()})`
  }
  const header = (error) => {
    try { return Error.prototype.toString.call(error) } catch { return String(error) }
  }
  Error.prepareStackTrace = (error, sites) => [header(error), ...sites.map(frameText)].join("\n")
  const mapText = (text) => text.replace(/<input>:(\d+)/g, (_, line) => mapFrame(Number(line)).join(":"))

  // -- console, with Node's formatting of values --------------------------------------------
  const quote = (s) => "'" + s.replace(/\\/g, "\\\\").replace(/'/g, "\\'").replace(/\n/g, "\\n") + "'"
  const keyText = (k) => typeof k === "symbol" ? `[${String(k)}]` : /^[A-Za-z_$][\w$]*$/.test(k) ? k : quote(k)
  const wrap = (open, items, close, indent) => {
    if (items.length === 0) return open.trimEnd() + close.trimStart()
    const flat = open + items.join(", ") + close
    if (flat.length + indent.length <= 76 && !items.some((i) => i.includes("\n"))) return flat
    const pad = indent + "  "
    return open.trimEnd() + "\n" + items.map((i) => pad + i).join(",\n") + "\n" + indent + close.trimStart()
  }
  const inspect = (value, depth = 2, seen = [], indent = "") => {
    switch (typeof value) {
      case "string": return seen.length ? quote(value) : value
      case "number": return Object.is(value, -0) ? "-0" : String(value)
      case "boolean": return String(value)
      case "bigint": return `${value}n`
      case "symbol": return String(value)
      case "undefined": return "undefined"
      case "function": {
        const src = Function.prototype.toString.call(value)
        if (src.startsWith("class")) return `[class ${value.name || "(anonymous)"}]`
        return value.name ? `[Function: ${value.name}]` : "[Function (anonymous)]"
      }
    }
    if (value === null) return "null"
    if (seen.includes(value)) return "[Circular]"
    if (value instanceof Error) return mapText(String(value.stack || header(value)))
    if (value instanceof Date) return Number.isNaN(value.getTime()) ? "Invalid Date" : value.toISOString()
    if (value instanceof RegExp) return String(value)
    if (value instanceof Promise) return "Promise { <pending> }"
    const inner = [...seen, value]
    const nested = (v) => inspect(v, depth - 1, inner, indent + "  ")
    const props = (skip) => {
      const out = []
      for (const key of Reflect.ownKeys(value)) {
        if (skip(key)) continue
        const d = Object.getOwnPropertyDescriptor(value, key)
        if (!d || !d.enumerable) continue
        const shown = "value" in d ? nested(d.value) : d.set ? "[Getter/Setter]" : "[Getter]"
        out.push(`${keyText(key)}: ${shown}`)
      }
      return out
    }
    if (Array.isArray(value) || ArrayBuffer.isView(value)) {
      const label = Array.isArray(value) ? "" : `${value.constructor.name}(${value.length}) `
      if (depth < 0) return Array.isArray(value) ? "[Array]" : `[${value.constructor.name}]`
      const items = Array.from(value.slice(0, 100), nested)
      if (value.length > 100) items.push(`... ${value.length - 100} more items`)
      if (Array.isArray(value)) items.push(...props((k) => typeof k === "string" && /^\d+$/.test(k) || k === "length"))
      return wrap(label + "[ ", items, " ]", indent)
    }
    if (value instanceof Map || value instanceof Set) {
      const kind = value instanceof Map ? "Map" : "Set"
      if (depth < 0) return `[${kind}]`
      const items = []
      for (const entry of value) {
        if (items.length === 100) { items.push(`... ${value.size - 100} more items`); break }
        items.push(kind === "Map" ? `${nested(entry[0])} => ${nested(entry[1])}` : nested(entry))
      }
      return wrap(`${kind}(${value.size}) { `, items, " }", indent)
    }
    const proto = Object.getPrototypeOf(value)
    const name = proto === null ? "[Object: null prototype] " :
      proto.constructor && proto.constructor.name && proto.constructor.name !== "Object" ? proto.constructor.name + " " : ""
    if (depth < 0) return `[${name.trim() || "Object"}]`
    return wrap(name + "{ ", props(() => false), " }", indent)
  }
  const format = (args) => {
    let rest = args
    let head = ""
    if (typeof args[0] === "string" && args[0].includes("%") && args.length > 1) {
      let i = 1
      head = args[0].replace(/%([sdifjoOc%])/g, (m, f) => {
        if (f === "%") return "%"
        if (i >= args.length) return m
        const v = args[i++]
        if (f === "s") return typeof v === "string" ? v : inspect(v, 1, [])
        if (f === "d" || f === "i") return String(f === "i" ? parseInt(v) : Number(v))
        if (f === "f") return String(parseFloat(v))
        if (f === "j") return JSON.stringify(v)
        if (f === "c") return ""
        return inspect(v, f === "O" ? 2 : 4, [])
      })
      rest = args.slice(i)
      return [head, ...rest.map((a) => inspect(a))].join(" ")
    }
    return rest.map((a) => inspect(a)).join(" ")
  }
  let groupIndent = ""
  const emit = (fd, text) => {
    const body = groupIndent ? text.split("\n").map((l) => groupIndent + l).join("\n") : text
    write(fd, body + "\n")
  }
  const counts = new Map()
  const out = (...a) => emit(1, format(a))
  const err = (...a) => emit(2, format(a))
  const console = {
    log: out, info: out, debug: out, dir: (v) => emit(1, inspect(v)), table: out,
    error: err, warn: err,
    trace: (...a) => emit(2, mapText(`Trace: ${format(a)}\n` + new Error().stack.split("\n").slice(2).join("\n"))),
    assert: (ok, ...a) => { if (!ok) err(a.length ? `Assertion failed: ${format(a)}` : "Assertion failed") },
    group: (...a) => { if (a.length) out(...a); groupIndent += "  " },
    groupEnd: () => { groupIndent = groupIndent.slice(2) },
    count: (label = "default") => { counts.set(label, (counts.get(label) || 0) + 1); out(`${label}: ${counts.get(label)}`) },
    countReset: (label = "default") => { counts.delete(label) },
    time: () => {}, timeLog: () => {}, timeEnd: (label = "default") => out(`${label}: 0ms`),
  }
  console.groupCollapsed = console.group

  // -- the clock is the pinned commit's, and randomness is seeded by its sha -------------
  const RealDate = Date
  function SandboxDate(...args) {
    if (!new.target) return new RealDate(state.now).toString()
    return Reflect.construct(RealDate, args.length ? args : [state.now], new.target)
  }
  SandboxDate.prototype = RealDate.prototype
  Object.defineProperty(RealDate.prototype, "constructor", { value: SandboxDate, writable: true, configurable: true })
  SandboxDate.now = () => state.now
  SandboxDate.parse = RealDate.parse
  SandboxDate.UTC = RealDate.UTC
  let s0 = 0x9e3779b9, s1 = 0x243f6a88
  const random = () => {
    let x = s0, y = s1
    s0 = y; x ^= x << 23; x ^= x >>> 17; x ^= y ^ (y >>> 26); s1 = x
    return ((s0 + s1) >>> 0) / 4294967296
  }

  // -- timers run on a virtual clock once the job queue is empty --------------------------
  const setTimer = (repeat) => (fn, ms = 0, ...args) => {
    if (typeof fn !== "function") throw new TypeError("The callback must be a function")
    const timer = { id: ++state.timerSeq, due: Math.max(0, Number(ms) || 0), fn, args, repeat }
    timer.at = timer.due + (state.clock || 0)
    state.timers.push(timer)
    return timer.id
  }
  const clearTimer = (id) => { state.timers = state.timers.filter((t) => t.id !== id) }
  const runTimer = () => {
    if (state.exited || state.timers.length === 0) return false
    state.timers.sort((a, b) => a.at - b.at || a.id - b.id)
    const timer = state.timers.shift()
    state.clock = timer.at
    if (timer.repeat) { timer.at += Math.max(1, timer.due); state.timers.push(timer) }
    try { timer.fn(...timer.args) } catch (e) { if (!isExit(e)) fail(e) }
    return true
  }

  // -- process: a virtual one; nothing of the host's ----------------------------------------
  const EXIT = Symbol("memhtml.exit")
  const isExit = (e) => e !== null && typeof e === "object" && e[EXIT] === true
  const process = {
    argv: ["js-exec", SCRIPT], env: Object.freeze({}), execArgv: [], pid: 1,
    cwd: () => "/workspace",
    exit(code) {
      if (code !== undefined) state.exitCode = Number(code) | 0
      state.exited = true
      throw { [EXIT]: true, toString: () => "process.exit()" }
    },
    nextTick: (fn, ...args) => queueMicrotask(() => fn(...args)),
    stdout: { write: (s) => { write(1, String(s)); return true }, isTTY: false },
    stderr: { write: (s) => { write(2, String(s)); return true }, isTTY: false },
  }
  Object.defineProperty(process, "exitCode", {
    get: () => state.exitCode, set: (v) => { state.exitCode = Number(v) | 0 }, enumerable: true,
  })

  // -- modules: what a rewritten `import` resolves to ----------------------------------------
  const resolveSpecifier = (spec) => {
    const name = String(spec)
    if (name.startsWith("./") || name.startsWith("../")) return normalizePath("/workspace/" + name)
    if (name.startsWith("/")) return normalizePath(name)
    return name.startsWith("node:") ? name : `node:${name}`
  }
  const normalizePath = (p) => {
    const parts = []
    for (const seg of p.split("/")) {
      if (seg === "" || seg === ".") continue
      if (seg === "..") parts.pop()
      else parts.push(seg)
    }
    return "/" + parts.join("/")
  }
  const load = (spec) => {
    const id = resolveSpecifier(spec)
    if (state.modules.has(id)) return state.modules.get(id)
    const factory = state.factories.get(id)
    if (factory === undefined) {
      const e = new Error(`Cannot find module '${spec}': the sandbox provides ${[...state.factories.keys()].join(", ")}`)
      e.code = "ERR_MODULE_NOT_FOUND"
      throw e
    }
    const exports = factory(load, internal)
    const ns = Object.create(null)
    for (const key of Object.keys(exports)) ns[key] = exports[key]
    // Node's builtins import as a default too (`import fs from "node:fs"`); the helpers do not.
    if (!("default" in ns) && id.startsWith("node:")) ns.default = exports
    Object.defineProperty(ns, Symbol.toStringTag, { value: "Module" })
    Object.freeze(ns)
    state.modules.set(id, ns)
    return ns
  }
  const importStatic = (spec, names) => {
    const ns = load(spec)
    for (const name of names) {
      if (!(name in ns)) throw new SyntaxError(`The requested module '${spec}' does not provide an export named '${name}'`)
    }
    return ns
  }
  const importDynamic = (spec) => { try { return Promise.resolve(load(spec)) } catch (e) { return Promise.reject(e) } }
  const define = (id, factory) => { state.factories.set(id, factory) }

  // -- what a script finds on globalThis -------------------------------------------------
  const hide = (name, value) => Object.defineProperty(G, name, { value, writable: true, configurable: true, enumerable: false })
  delete G.performance
  hide("console", console)
  hide("Date", SandboxDate)
  Math.random = random
  hide("setTimeout", setTimer(false))
  hide("setInterval", setTimer(true))
  hide("setImmediate", (fn, ...args) => setTimer(false)(fn, 0, ...args))
  hide("clearTimeout", clearTimer)
  hide("clearInterval", clearTimer)
  hide("clearImmediate", clearTimer)
  hide("fetch", function fetch() { return Promise.reject(new TypeError("fetch failed: Network access not configured")) })
  hide("process", process)
  hide("__memhtml_import", importStatic)
  hide("__memhtml_import_dynamic", importDynamic)
  hide("__memhtml_import_meta", Object.freeze({ url: "file://" + SCRIPT, filename: SCRIPT, dirname: "/workspace" }))

  const fail = (e) => {
    if (state.settled === "pending" || state.settled === "fulfilled") { state.settled = "rejected"; state.error = e }
  }
  const internal = { call, fsError, state, inspect, write, normalizePath, define, load }
  // The guest sources register their modules through __memhtml_boot; the worker drives
  // the run through __memhtml_control. It deletes both before the script: a script never
  // sees them.
  G.__memhtml_boot = { define, internal }
  const controls = {
    configure(json) {
      const init = JSON.parse(json)
      state.now = init.now_ms
      s0 = init.seed[0] >>> 0 || 1
      s1 = init.seed[1] >>> 0 || 2
      state.files.set(SCRIPT, init.script)
      for (const [path, text] of Object.entries(init.files || {})) state.files.set(path, text)
      return true
    },
    settle(promise) {
      promise.then(() => { if (state.settled === "pending") state.settled = "fulfilled" }, (e) => {
        if (isExit(e)) { if (state.settled === "pending") state.settled = "fulfilled" } else fail(e)
      })
      return true
    },
    status: () => (state.exited && state.settled !== "rejected" ? "exited" : state.settled),
    timer: runTimer,
    exit_code: () => state.exitCode,
    oom: () => state.error instanceof InternalError && state.error.message === "out of memory",
    error: () => {
      const e = state.error
      if (e instanceof Error) return mapText(String(e.stack || header(e)))
      return "Uncaught " + inspect(e, 2, [e])
    },
    map: (text) => mapText(String(text)),
  }
  G.__memhtml_control = (command, arg) => {
    const answer = controls[command](arg)
    return typeof answer === "string" ? answer.slice(0) : answer
  }
})(globalThis.__memhtml_host, globalThis.__memhtml_write)
delete globalThis.__memhtml_host
delete globalThis.__memhtml_write

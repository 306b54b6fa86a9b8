// `node:fs`, `node:fs/promises`, `node:path` and a small `Buffer` for the sandbox.
//
// The guest filesystem is read-only everywhere: the corpus at /mnt/memhtml (one
// commit's tree, listed once from the host), and the script and helper sources under
// /workspace. Every write answers EROFS. Paths resolve lexically (`..` never climbs
// above `/`), a symbolic link is an entry that is never followed, and the host checks
// every read again: this file is a convenience, the host is the boundary.
//
// As in the original's sandbox, `statSync(p).isDirectory` (and isFile,
// isSymbolicLink) are boolean PROPERTIES, not methods; Dirents keep Node's methods.
(function (boot) {
  "use strict"
  const { call, fsError, state, normalizePath, define } = boot.internal
  const MOUNT = "/mnt/memhtml"
  const MOUNTED = Symbol("mount")
  const FILE = 0
  const LINK = 1
  const ROOT = { mnt: { memhtml: MOUNTED }, workspace: { "script.mjs": FILE, lib: { "corpus.mjs": FILE, "nhp.mjs": FILE } } }
  let listing = null
  const mounted = () => listing || (listing = call("listing"))

  const error = (code, syscall, path) => {
    const known = {
      ENOENT: [-2, "no such file or directory"], ENOTDIR: [-20, "not a directory"],
      EISDIR: [-21, "illegal operation on a directory"], EROFS: [-30, "read-only file system"],
      ELOOP: [-40, "too many symbolic links encountered (links are not followed)"],
      EINVAL: [-22, "invalid argument"], ENAMETOOLONG: [-36, "name too long"],
    }[code]
    return fsError({ code, errno: known[0], syscall, path, message: `${code}: ${known[1]}, ${syscall} '${path}'` })
  }
  const pathOf = (p, syscall) => {
    if (p instanceof Uint8Array) p = Buffer.from(p).toString()
    else if (p !== null && typeof p === "object" && typeof p.href === "string") {
      if (!p.href.startsWith("file://")) throw new TypeError("The URL must be of scheme file")
      p = decodeURIComponent(p.pathname)
    }
    if (typeof p !== "string") {
      const e = new TypeError(`The "path" argument must be of type string. Received ${typeof p}`)
      e.code = "ERR_INVALID_ARG_TYPE"
      throw e
    }
    if (p.includes("\0")) throw error("EINVAL", syscall, p)
    // Linux's PATH_MAX: a longer path is refused before it reaches the host (which refuses it too).
    if (p.length > 4096) throw error("ENAMETOOLONG", syscall, p.slice(0, 4096) + "...")
    return p
  }
  const absolute = (p) => normalizePath(p.startsWith("/") ? p : "/workspace/" + p)
  // A folder (object), FILE, LINK, or undefined.
  const lookup = (abs) => {
    let node = ROOT
    if (abs === "/") return node
    for (const seg of abs.slice(1).split("/")) {
      if (node === MOUNTED) node = mounted()
      if (node === null || typeof node !== "object" || !Object.hasOwn(node, seg)) return undefined
      node = node[seg]
    }
    return node === MOUNTED ? mounted() : node
  }
  const sortedNames = new WeakMap()
  const namesOf = (folder) => {
    let names = sortedNames.get(folder)
    if (names === undefined) { names = Object.keys(folder).sort(); sortedNames.set(folder, names) }
    return names
  }
  const inMount = (abs) => abs === MOUNT || abs.startsWith(MOUNT + "/")

  const readFileSync = (path, options) => {
    const p = pathOf(path, "open")
    const encoding = typeof options === "string" ? options : options && options.encoding || null
    const flag = options && typeof options === "object" && options.flag || "r"
    if (!/^rs?$/.test(flag)) throw error("EROFS", "open", p)
    const abs = absolute(p)
    const utf8 = encoding === "utf8" || encoding === "utf-8"
    if (!inMount(abs)) {
      const node = lookup(abs)
      if (node === undefined) throw error("ENOENT", "open", p)
      if (typeof node === "object") throw error("EISDIR", "read", p)
      const text = state.files.get(abs) || ""
      return utf8 ? text : encoding ? Buffer.from(text).toString(encoding) : Buffer.from(text)
    }
    // The host resolves the path again and answers ENOENT, EISDIR or ELOOP itself.
    const got = call("read", { path: abs, shown: p, enc: utf8 ? "utf8" : "binary" })
    if (utf8) return got
    const bytes = Buffer.fromLatin1(got.latin1)
    return encoding ? bytes.toString(encoding) : bytes
  }
  class Dirent {
    constructor(name, parentPath, node) {
      this.name = name
      this.parentPath = parentPath
      this.path = parentPath
      Object.defineProperty(this, "node", { value: node })
    }
    isFile() { return this.node === FILE }
    isDirectory() { return typeof this.node === "object" }
    isSymbolicLink() { return this.node === LINK }
  }
  const readdirSync = (path, options) => {
    const p = pathOf(path, "scandir")
    const folder = lookup(absolute(p))
    if (folder === undefined) throw error("ENOENT", "scandir", p)
    if (typeof folder !== "object") throw error("ENOTDIR", "scandir", p)
    const withTypes = options && typeof options === "object" && options.withFileTypes
    const recursive = options && typeof options === "object" && options.recursive
    const out = []
    const visit = (node, prefix, parent) => {
      for (const name of namesOf(node)) {
        const child = node[name] === MOUNTED ? mounted() : node[name]
        out.push(withTypes ? new Dirent(name, parent, child) : prefix + name)
        if (recursive && typeof child === "object") visit(child, `${prefix}${name}/`, `${parent}/${name}`)
      }
    }
    visit(folder, "", absolute(p))
    return out
  }
  // Kinds and mode are own properties (booleans, as in the original's sandbox); size and
  // the times are computed on first read, so a walk's stat of every entry stays cheap.
  class Stats {
    constructor(node, abs) {
      this.isFile = node === FILE
      this.isDirectory = typeof node === "object"
      this.isSymbolicLink = node === LINK
      this.mode = this.isDirectory ? 0o40555 : this.isSymbolicLink ? 0o120777 : 0o100444
      Object.defineProperty(this, "abs", { value: abs })
    }
    get size() {
      if (this.isDirectory) return 4096
      return inMount(this.abs) ? call("size", this.abs) : Buffer.byteLength(state.files.get(this.abs) || "")
    }
    get mtime() { return new Date(state.now) }
    get atime() { return new Date(state.now) }
    get ctime() { return new Date(state.now) }
    get birthtime() { return new Date(state.now) }
    get mtimeMs() { return state.now }
    get atimeMs() { return state.now }
    get ctimeMs() { return state.now }
    get birthtimeMs() { return state.now }
  }
  Object.assign(Stats.prototype, { dev: 0, ino: 0, nlink: 1, uid: 0, gid: 0, rdev: 0, blksize: 4096 })
  const statSync = (path, options) => {
    const p = pathOf(path, "stat")
    const abs = absolute(p)
    const node = lookup(abs)
    if (node === undefined) {
      if (options && options.throwIfNoEntry === false) return undefined
      throw error("ENOENT", "stat", p)
    }
    return new Stats(node, abs)
  }
  const existsSync = (path) => {
    try { return lookup(absolute(pathOf(path, "access"))) !== undefined } catch { return false }
  }
  const constants = { F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1 }
  const accessSync = (path, mode = 0) => {
    const p = pathOf(path, "access")
    if (lookup(absolute(p)) === undefined) throw error("ENOENT", "access", p)
    if (mode & constants.W_OK) throw error("EROFS", "access", p)
  }
  const realpathSync = (path) => {
    const p = pathOf(path, "realpath")
    const abs = absolute(p)
    if (lookup(abs) === undefined) throw error("ENOENT", "realpath", p)
    return abs
  }
  realpathSync.native = realpathSync

  // For the helper: its paths are checked (and their errors worded) as readFileSync's.
  boot.internal.pathOf = pathOf
  // For the helper's walk: a folder's entries with their kinds, without a stat per entry.
  boot.internal.folder = (path) => {
    const node = lookup(absolute(pathOf(path, "scandir")))
    if (node === undefined || typeof node !== "object") return undefined
    return (name) => {
      const child = node[name] === MOUNTED ? mounted() : node[name]
      return typeof child === "object" ? "dir" : child === LINK ? "link" : "file"
    }
  }
  const reads = { readFileSync, readdirSync, statSync, lstatSync: statSync, existsSync, accessSync, realpathSync }
  const WRITES = {
    writeFileSync: "open", appendFileSync: "open", mkdirSync: "mkdir", mkdtempSync: "mkdtemp",
    rmSync: "rm", rmdirSync: "rmdir", unlinkSync: "unlink", renameSync: "rename",
    copyFileSync: "copyfile", cpSync: "cp", symlinkSync: "symlink", linkSync: "link",
    chmodSync: "chmod", chownSync: "chown", utimesSync: "utime", truncateSync: "open",
    openSync: "open", createWriteStream: "open",
  }
  const fs = { constants, ...reads }
  for (const [name, syscall] of Object.entries(WRITES)) {
    fs[name] = function (path) { throw error("EROFS", syscall, String(path)) }
  }
  const later = (fn) => (...args) => new Promise((resolve, reject) => {
    try { resolve(fn(...args)) } catch (e) { reject(e) }
  })
  const promises = {
    constants,
    readFile: later(readFileSync), readdir: later(readdirSync), stat: later(statSync),
    lstat: later(statSync), access: later(accessSync), realpath: later(realpathSync),
  }
  for (const [name, syscall] of Object.entries(WRITES)) {
    const short = name.replace(/Sync$/, "")
    if (name.endsWith("Sync") && short !== "exists") {
      promises[short] = (path) => Promise.reject(error("EROFS", syscall, String(path)))
      // Node's callback form: the error goes to the last argument.
      fs[short] = (...args) => {
        const done = args[args.length - 1]
        if (typeof done === "function") queueMicrotask(() => done(error("EROFS", syscall, String(args[0]))))
      }
    }
  }
  for (const name of ["readFile", "readdir", "stat", "lstat", "access", "realpath"]) {
    const sync = reads[name === "lstat" ? "statSync" : name + "Sync"]
    fs[name] = (...args) => {
      const done = args.pop()
      queueMicrotask(() => {
        let value, failure = null
        try { value = sync(...args) } catch (e) { failure = e }
        done(failure, value)
      })
    }
  }
  fs.exists = (path, done) => queueMicrotask(() => done(existsSync(path)))
  fs.promises = promises
  define("node:fs", () => fs)
  define("node:fs/promises", () => promises)

  // -- node:path (POSIX) -----------------------------------------------------------
  const normalize = (p) => {
    if (p === "") return "."
    const absoluteP = p.startsWith("/")
    const parts = []
    for (const seg of p.split("/")) {
      if (seg === "" || seg === ".") continue
      if (seg === ".." && parts.length && parts[parts.length - 1] !== "..") parts.pop()
      else if (seg !== ".." || !absoluteP) parts.push(seg)
    }
    const body = parts.join("/")
    const tail = p.endsWith("/") && body ? "/" : ""
    return (absoluteP ? "/" + body : body || ".") + tail
  }
  const resolve = (...parts) => {
    let out = ""
    for (let i = parts.length - 1; i >= 0 && !out.startsWith("/"); i--) if (parts[i]) out = parts[i] + (out ? "/" + out : "")
    return normalizePath(out.startsWith("/") ? out : "/workspace/" + out)
  }
  const basename = (p, ext) => {
    const base = p.replace(/\/+$/, "").split("/").pop() || ""
    return ext && base.endsWith(ext) && base !== ext ? base.slice(0, -ext.length) : base
  }
  const extname = (p) => {
    const base = basename(p)
    const dot = base.lastIndexOf(".")
    return dot <= 0 ? "" : base.slice(dot)
  }
  const dirname = (p) => {
    const trimmed = p.replace(/\/+$/, "")
    const cut = trimmed.lastIndexOf("/")
    return cut < 0 ? "." : cut === 0 ? "/" : trimmed.slice(0, cut)
  }
  const relative = (from, to) => {
    const a = resolve(from).split("/").filter(Boolean)
    const b = resolve(to).split("/").filter(Boolean)
    let i = 0
    while (i < a.length && i < b.length && a[i] === b[i]) i++
    return [...a.slice(i).map(() => ".."), ...b.slice(i)].join("/")
  }
  const path = {
    sep: "/", delimiter: ":", normalize, resolve, basename, extname, dirname, relative,
    join: (...parts) => normalize(parts.filter((x) => x !== "").join("/")),
    isAbsolute: (p) => p.startsWith("/"),
    parse: (p) => {
      const base = basename(p)
      const ext = extname(p)
      return { root: p.startsWith("/") ? "/" : "", dir: dirname(p), base, ext, name: ext ? base.slice(0, -ext.length) : base }
    },
    format: (o) => (o.dir ? o.dir + "/" : o.root || "") + (o.base || (o.name || "") + (o.ext || "")),
    toNamespacedPath: (p) => p,
  }
  path.posix = path
  define("node:path", () => path)

  // -- Buffer: bytes with UTF-8, latin-1, hex and base64 text forms ------------------------
  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  const utf8 = (text) => {
    const out = []
    for (const ch of String(text)) {
      let c = ch.codePointAt(0)
      if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd
      if (c < 0x80) out.push(c)
      else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63))
      else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63))
      else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63))
    }
    return out
  }
  const decodeUtf8 = (bytes) => {
    let out = ""
    for (let i = 0; i < bytes.length;) {
      const b = bytes[i]
      const need = b < 0x80 ? 0 : b >= 0xf0 && b < 0xf8 ? 3 : b >= 0xe0 ? 2 : b >= 0xc2 && b < 0xe0 ? 1 : -1
      let c = need === 0 ? b : need === 1 ? b & 31 : need === 2 ? b & 15 : b & 7
      let ok = need >= 0 && i + need < bytes.length + (need ? 0 : 1)
      for (let k = 1; ok && k <= need; k++) {
        if ((bytes[i + k] & 0xc0) !== 0x80) ok = false
        else c = (c << 6) | (bytes[i + k] & 63)
      }
      if (!ok) { out += "\ufffd"; i += 1; continue }
      out += String.fromCodePoint(c)
      i += need + 1
    }
    return out
  }
  class Buffer extends Uint8Array {
    static from(value, encoding) {
      if (typeof value === "string") {
        const enc = (encoding || "utf8").toLowerCase()
        if (enc === "hex") return Buffer.of(...(value.match(/../g) || []).map((h) => parseInt(h, 16)))
        if (enc === "base64") return Buffer.fromLatin1(atob(value))
        if (enc === "latin1" || enc === "binary" || enc === "ascii") return Buffer.fromLatin1(value)
        return new Buffer(utf8(value))
      }
      return new Buffer(value)
    }
    static fromLatin1(text) {
      const out = new Buffer(text.length)
      for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i) & 0xff
      return out
    }
    static isBuffer(value) { return value instanceof Buffer }
    static byteLength(text) { return typeof text === "string" ? utf8(text).length : text.byteLength }
    static alloc(size, fill = 0) { return new Buffer(size).fill(fill) }
    static concat(list) {
      const out = new Buffer(list.reduce((n, b) => n + b.length, 0))
      let at = 0
      for (const b of list) { out.set(b, at); at += b.length }
      return out
    }
    toString(encoding = "utf8", start = 0, end = this.length) {
      const bytes = this.subarray(start, end)
      const enc = String(encoding).toLowerCase()
      const latin1 = () => { let s = ""; for (const b of bytes) s += String.fromCharCode(b); return s }
      if (enc === "hex") return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")
      if (enc === "base64") return btoa(latin1())
      if (enc === "latin1" || enc === "binary") return latin1()
      if (enc === "ascii") return latin1().replace(/[\x80-\xff]/g, (c) => String.fromCharCode(c.charCodeAt(0) & 0x7f))
      return decodeUtf8(bytes)
    }
    equals(other) { return this.length === other.length && this.every((b, i) => b === other[i]) }
    toJSON() { return { type: "Buffer", data: Array.from(this) } }
  }
  Object.defineProperty(globalThis, "Buffer", { value: Buffer, writable: true, configurable: true })
  define("node:buffer", () => ({ Buffer }))
  define("node:process", () => globalThis.process)
})(globalThis.__memhtml_boot)

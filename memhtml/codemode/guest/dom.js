// `/workspace/lib/nhp.mjs`: a small DOM in the shape of node-html-parser, the
// original sandbox's parser. The host parses (libxml2, memhtml/codemode/extract.py)
// and sends the tree as nested arrays; this file builds nodes with the properties
// and selector methods scripts reach for through `memory.document`:
// querySelector(All) (descendant, child, sibling combinators, #id, .class,
// [attr], [attr=|~=|^=|$=|*=||=v i], :first-child, :last-child, :only-child,
// :nth-child(), :not(), :empty), text, attributes, getAttribute, children,
// siblings, closest and innerHTML/outerHTML. querySelectorAll returns an Array.
(function (boot) {
  "use strict"
  const { call, define } = boot.internal
  const VOID = new Set(["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"])
  const NodeType = { ELEMENT_NODE: 1, TEXT_NODE: 3, COMMENT_NODE: 8 }
  const escapeText = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
  const escapeAttr = (s) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;")

  class Node {
    constructor(parentNode = null) {
      this.parentNode = parentNode
      this.childNodes = []
    }
    get textContent() { return this.text }
    get innerText() { return this.text }
    get nextSibling() { return this.sibling(1, false) }
    get previousSibling() { return this.sibling(-1, false) }
    get nextElementSibling() { return this.sibling(1, true) }
    get previousElementSibling() { return this.sibling(-1, true) }
    sibling(step, elementsOnly) {
      const list = this.parentNode ? this.parentNode.childNodes : []
      for (let i = list.indexOf(this) + step; i >= 0 && i < list.length; i += step) {
        if (!elementsOnly || list[i].nodeType === 1) return list[i]
      }
      return null
    }
  }
  class TextNode extends Node {
    constructor(text, parentNode) { super(parentNode); this._text = text }
    get nodeType() { return 3 }
    get text() { return this._text }
    get rawText() { return escapeText(this._text) }
    get trimmedText() { return this._text.trim() }
    get isWhitespace() { return /^\s*$/.test(this._text) }
    toString() { return this.rawText }
  }
  class HTMLElement extends Node {
    constructor(tag, attributes, parentNode) {
      super(parentNode)
      this.rawTagName = tag
      this._attrs = attributes
    }
    get nodeType() { return 1 }
    get tagName() { return this.rawTagName === null ? null : this.rawTagName.toUpperCase() }
    get localName() { return this.rawTagName }
    // A <br> reads as a line break, as node-html-parser's does (a claim spanning one keeps it).
    get text() { return this.rawTagName === "br" ? "\n" : this.childNodes.map((n) => n.text).join("") }
    get rawText() { return this.rawTagName === "br" ? "\n" : this.childNodes.map((n) => n.rawText).join("") }
    get structuredText() { return this.text.replace(/\s+/g, " ").trim() }
    get attributes() { return { ...this._attrs } }
    get attrs() { return this.attributes }
    get rawAttributes() { return this.attributes }
    get rawAttrs() { return Object.entries(this._attrs).map(([k, v]) => `${k}="${escapeAttr(v)}"`).join(" ") }
    getAttribute(name) {
      const key = String(name).toLowerCase()
      return Object.hasOwn(this._attrs, key) ? this._attrs[key] : undefined
    }
    hasAttribute(name) { return Object.hasOwn(this._attrs, String(name).toLowerCase()) }
    get id() { return this.getAttribute("id") || "" }
    get classNames() { return this.getAttribute("class") || "" }
    get classList() {
      const value = this.classNames.split(/\s+/).filter(Boolean)
      return { value, length: value.length, contains: (c) => value.includes(c), values: () => value.values(), toString: () => value.join(" ") }
    }
    get children() { return this.childNodes.filter((n) => n.nodeType === 1) }
    get childElementCount() { return this.children.length }
    get firstChild() { return this.childNodes[0] || null }
    get lastChild() { return this.childNodes[this.childNodes.length - 1] || null }
    get firstElementChild() { return this.children[0] || null }
    get lastElementChild() { const c = this.children; return c[c.length - 1] || null }
    get innerHTML() { return this.childNodes.map((n) => n.toString()).join("") }
    get outerHTML() { return this.toString() }
    toString() {
      if (this.rawTagName === null) return this.innerHTML
      const attrs = this.rawAttrs ? " " + this.rawAttrs : ""
      if (VOID.has(this.rawTagName)) return `<${this.rawTagName}${attrs}>`
      return `<${this.rawTagName}${attrs}>${this.innerHTML}</${this.rawTagName}>`
    }
    querySelectorAll(selector) {
      const compiled = compile(selector)
      const found = []
      descend(this, (el) => { if (matchesAny(el, compiled)) found.push(el) })
      return found
    }
    querySelector(selector) {
      const compiled = compile(selector)
      let found = null
      descend(this, (el) => { if (matchesAny(el, compiled)) { found = el; return true } return false })
      return found
    }
    getElementsByTagName(tag) { return this.querySelectorAll(tag) }
    getElementById(id) {
      let found = null
      descend(this, (el) => { if (el.id === id) { found = el; return true } return false })
      return found
    }
    matches(selector) { return this.rawTagName !== null && matchesAny(this, compile(selector)) }
    closest(selector) {
      const compiled = compile(selector)
      for (let el = this; el && el.rawTagName !== null; el = el.parentNode) if (matchesAny(el, compiled)) return el
      return null
    }
  }

  // Elements below `root`, in document order; stops when `visit` returns true.
  const descend = (root, visit) => {
    const stack = root.childNodes.slice().reverse()
    while (stack.length) {
      const node = stack.pop()
      if (node.nodeType !== 1) continue
      if (visit(node) === true) return
      for (let i = node.childNodes.length - 1; i >= 0; i--) stack.push(node.childNodes[i])
    }
  }

  // -- selectors ---------------------------------------------------------------------
  const cache = new Map()
  const bad = (selector) => new SyntaxError(`'${selector}' is not a valid selector`)
  const compile = (selector) => {
    const text = String(selector)
    let compiled = cache.get(text)
    if (compiled === undefined) {
      compiled = parseSelector(text)
      cache.set(text, compiled)
    }
    return compiled
  }
  const IDENT = /^(?:\\.|[\w\u00a0-\uffff-])+/
  const unescape = (s) => s.replace(/\\(.)/g, "$1")
  const parseSelector = (text) => {
    let i = 0
    const rest = () => text.slice(i)
    const skipSpace = () => { const m = /^\s*/.exec(rest()); i += m[0].length; return m[0].length > 0 }
    const ident = () => {
      const m = IDENT.exec(rest())
      if (!m) throw bad(text)
      i += m[0].length
      return unescape(m[0])
    }
    const compound = () => {
      const c = { tag: null, ids: [], classes: [], attrs: [], pseudos: [] }
      let any = false
      if (text[i] === "*") { i++; any = true } else if (IDENT.test(rest())) { c.tag = ident().toLowerCase(); any = true }
      for (;;) {
        const ch = text[i]
        if (ch === "#") { i++; c.ids.push(ident()) } else if (ch === ".") { i++; c.classes.push(ident()) } else if (ch === "[") {
          const m = /^\[\s*([^\s~|^$*=\]]+)\s*(?:([~|^$*]?=)\s*(?:"((?:\\.|[^"])*)"|'((?:\\.|[^'])*)'|([^\s\]]+))\s*([iIsS])?\s*)?\]/.exec(rest())
          if (!m) throw bad(text)
          i += m[0].length
          const value = m[3] ?? m[4] ?? m[5]
          c.attrs.push({ name: m[1].toLowerCase(), op: m[2] || null, value: value === undefined ? null : unescape(value), ci: /i/i.test(m[6] || "") })
        } else if (ch === ":" && text[i + 1] !== ":") {
          i++
          const name = ident().toLowerCase()
          let arg = null
          if (text[i] === "(") {
            let depth = 0, j = i
            for (; j < text.length; j++) { if (text[j] === "(") depth++; else if (text[j] === ")" && --depth === 0) break }
            if (j >= text.length) throw bad(text)
            arg = text.slice(i + 1, j).trim()
            i = j + 1
          }
          if (!PSEUDO[name]) throw bad(text)
          c.pseudos.push({ name, arg: name === "not" ? parseSelector(arg) : arg })
        } else break
        any = true
      }
      if (!any) throw bad(text)
      return c
    }
    const list = []
    for (;;) {
      const parts = []
      skipSpace()
      let combinator = null
      for (;;) {
        parts.push({ combinator, compound: compound() })
        const spaced = skipSpace()
        const ch = text[i]
        if (ch === ">" || ch === "+" || ch === "~") { combinator = ch; i++; skipSpace() } else if (ch === undefined || ch === ",") break
        else if (spaced) combinator = " "
        else throw bad(text)
      }
      list.push(parts)
      if (text[i] === ",") { i++; continue }
      break
    }
    return list
  }
  const nth = (arg, index) => {
    const a = arg.replace(/\s+/g, "").toLowerCase()
    if (a === "odd") return index % 2 === 1
    if (a === "even") return index % 2 === 0
    const m = /^([+-]?\d*)n([+-]\d+)?$/.exec(a)
    if (!m) return index === Number(a)
    const step = m[1] === "" || m[1] === "+" ? 1 : m[1] === "-" ? -1 : Number(m[1])
    const offset = Number(m[2] || 0)
    return step === 0 ? index === offset : (index - offset) / step >= 0 && (index - offset) % step === 0
  }
  const position = (el) => el.parentNode ? el.parentNode.children.indexOf(el) + 1 : 1
  const PSEUDO = {
    "first-child": (el) => el.previousElementSibling === null,
    "last-child": (el) => el.nextElementSibling === null,
    "only-child": (el) => el.previousElementSibling === null && el.nextElementSibling === null,
    "nth-child": (el, arg) => nth(arg, position(el)),
    not: (el, arg) => !matchesAny(el, arg),
    empty: (el) => el.childNodes.length === 0,
  }
  const attrMatches = (el, a) => {
    if (!Object.hasOwn(el._attrs, a.name)) return false
    if (a.op === null) return true
    let have = el._attrs[a.name]
    let want = a.value
    if (a.ci) { have = have.toLowerCase(); want = want.toLowerCase() }
    switch (a.op) {
      case "=": return have === want
      case "~=": return have.split(/\s+/).includes(want)
      case "|=": return have === want || have.startsWith(want + "-")
      case "^=": return want !== "" && have.startsWith(want)
      case "$=": return want !== "" && have.endsWith(want)
      case "*=": return want !== "" && have.includes(want)
    }
    return false
  }
  const matchesCompound = (el, c) => {
    if (el.rawTagName === null) return false
    if (c.tag !== null && el.rawTagName.toLowerCase() !== c.tag) return false
    for (const id of c.ids) if (el.id !== id) return false
    if (c.classes.length) { const have = el.classList; for (const k of c.classes) if (!have.contains(k)) return false }
    for (const a of c.attrs) if (!attrMatches(el, a)) return false
    for (const p of c.pseudos) if (!PSEUDO[p.name](el, p.arg)) return false
    return true
  }
  const matchesParts = (el, parts, k) => {
    if (!el || !matchesCompound(el, parts[k].compound)) return false
    if (k === 0) return true
    switch (parts[k].combinator) {
      case ">": return matchesParts(el.parentNode, parts, k - 1)
      case "+": return matchesParts(el.previousElementSibling, parts, k - 1)
      case "~": {
        for (let s = el.previousElementSibling; s; s = s.previousElementSibling) if (matchesParts(s, parts, k - 1)) return true
        return false
      }
      default: {
        for (let p = el.parentNode; p && p.rawTagName !== null; p = p.parentNode) if (matchesParts(p, parts, k - 1)) return true
        return false
      }
    }
  }
  const matchesAny = (el, list) => list.some((parts) => matchesParts(el, parts, parts.length - 1))

  // -- building a tree from the host's nested arrays --------------------------------------
  const fromTree = (tree) => {
    const build = (node, parent) => {
      if (typeof node === "string") return new TextNode(node, parent)
      const el = new HTMLElement(node[0], node[1], parent)
      for (let i = 2; i < node.length; i++) el.childNodes.push(build(node[i], el))
      return el
    }
    return build(tree, null)
  }
  boot.internal.fromTree = fromTree
  const parse = (html) => fromTree(call("parse", String(html)))
  define("/workspace/lib/nhp.mjs", () => ({ parse, HTMLElement, TextNode, Node, NodeType, valid: () => true, default: parse }))
})(globalThis.__memhtml_boot)

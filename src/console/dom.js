// @ts-check
/**
 * Building the page: elements are made with h(), never from HTML strings, so nothing the API returns
 * is ever parsed as markup; the CSP forbids inline scripts and styles anyway.
 */

/** @typedef {Node | string | number | bigint | null | undefined | false} Child */
/** @typedef {Child | Child[] | Child[][] | Child[][][]} Children */

/**
 * An element with attributes, properties and children. `on*` keys add listeners; `class`, `for`, `aria-*`,
 * `data-*` and any other string key are attributes (true: present, false/null/undefined: absent).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, any> | null} [attrs]
 * @param {...Children} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      element.addEventListener(key.slice(2), value);
    } else if (key === 'value' || key === 'checked' || key === 'disabled' || key === 'selected') {
      /** @type {any} */ (element)[key] = value;
    } else {
      element.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(element, children);
  return element;
}

/**
 * @param {Element} parent
 * @param {Children[]} children
 */
function append(parent, children) {
  for (const child of /** @type {Child[]} */ (children.flat(Number.POSITIVE_INFINITY))) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : String(child));
  }
}

const SVG = 'http://www.w3.org/2000/svg';

/**
 * An SVG element with attributes and children.
 * @param {string} tag
 * @param {Record<string, string | number>} [attrs]
 * @param {...(Node | string)} children
 * @returns {SVGElement}
 */
export function svg(tag, attrs = {}, ...children) {
  const element = /** @type {SVGElement} */ (document.createElementNS(SVG, tag));
  for (const [key, value] of Object.entries(attrs)) element.setAttribute(key, String(value));
  element.append(...children);
  return element;
}

/**
 * Replaces the children of `container`, keeping the keyboard focus on the element that had it: the
 * element with the same data-key in the new content (a re-render after a live event must not throw the
 * operator's focus back to the top of the page).
 * @param {Element} container
 * @param {...Children} children
 */
export function replace(container, ...children) {
  const active = document.activeElement;
  const key = active instanceof HTMLElement && container.contains(active) ? active.dataset.key : undefined;
  container.replaceChildren();
  append(container, children);
  if (key !== undefined) {
    const again = container.querySelector(`[data-key="${CSS.escape(key)}"]`);
    if (again instanceof HTMLElement) again.focus({ preventScroll: true });
  }
}

/**
 * A definition list of label/value pairs (the facts on the overview's cards).
 * @param {[string, Children][]} rows
 */
export function facts(rows) {
  return h(
    'dl',
    { class: 'facts' },
    rows.map(([label, value]) => [h('dt', null, label), h('dd', null, value)]),
  );
}

/**
 * A table: a caption, the headers, and rows of cells; each cell may be a Node, text or [text, attrs].
 * On a narrow window each row becomes a card whose cells are labelled with their header (style.css).
 * @param {{ caption?: string, headers: string[], rows: Children[][] | HTMLTableRowElement[], empty: string, className?: string }} spec
 */
export function table({ caption, headers, rows, empty, className }) {
  if (rows.length === 0) return h('p', { class: 'empty' }, empty);
  const body = rows.map((row) => {
    if (row instanceof HTMLTableRowElement) {
      [...row.cells].forEach((cell, i) => {
        cell.dataset.label = headers[i] ?? '';
      });
      return row;
    }
    return h(
      'tr',
      null,
      row.map((cell, i) => h('td', { 'data-label': headers[i] ?? '' }, cell)),
    );
  });
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: `responsive ${className ?? ''}` },
      caption ? h('caption', null, caption) : null,
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          headers.map((text) => h('th', { scope: 'col' }, text)),
        ),
      ),
      h('tbody', null, body),
    ),
  );
}

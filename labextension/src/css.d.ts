/** A stylesheet imported as its text (the nbextension's build loads `.css` files as text). */
declare module '*.css' {
  const text: string;
  export default text;
}

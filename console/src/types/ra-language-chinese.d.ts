declare module 'ra-language-chinese' {
  const messages: Record<string, unknown>;
  export default messages;
}

// oidc-provider ships no type declarations; the tests use a small part of it, untyped.
declare module 'oidc-provider' {
  // biome-ignore lint/suspicious/noExplicitAny: untyped third-party module, test use only
  const Provider: any;
  export default Provider;
}

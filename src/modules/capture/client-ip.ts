/**
 * The client's address as PostHog records it in `$ip`: the first `X-Forwarded-For` entry with
 * any port removed (IPv6 kept whole), else the socket's address.
 */
export function clientIp(headers: Headers, socketAddress: () => string | null): string | null {
  const forwarded = headers.get('x-forwarded-for');
  if (forwarded) {
    const first = forwarded.split(',')[0].trim();
    if (first) return stripPort(first);
  }
  return socketAddress();
}

function stripPort(address: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(address);
  if (bracketed) return bracketed[1];
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(address);
  return v4 ? v4[1] : address;
}

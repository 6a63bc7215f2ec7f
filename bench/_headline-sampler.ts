import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { cpuReading, otherCores } from './_machine';
import { peakRssMb, resetPeakRss, rssMb } from './_ingest-procs';
import type { TimelineSample } from './types';

/**
 * Samples the run twice a second: the server's resident memory (from /proc when the server is
 * a process of this machine, else from its /metrics) and the CPU other processes used (the
 * machine's busy time minus the bench's and its servers'), tagged with the phase running.
 */

export interface WatchedServer {
  /** The server's process on this machine, when known. */
  pid: number | null;
  /** Its /metrics, read when there is no pid (a server on another machine). */
  metricsUrl: string | null;
  /** The bench started it: its peak RSS counter (VmHWM) may be reset. Never touched otherwise. */
  own: boolean;
}

export interface Sampler {
  readonly timeline: TimelineSample[];
  setPhase(phase: string): void;
  watch(server: WatchedServer): void;
  /** A process of the bench (a server it spawned): its CPU is not "other". */
  addOurs(pid: number): void;
  resetPeak(): void;
  /** The server's peak RSS since `resetPeak` (VmHWM with a pid, else the highest sample). */
  peakMb(): Promise<number | null>;
  stop(): Promise<TimelineSample[]>;
}

export function startSampler(intervalMs = 500): Sampler {
  const started = performance.now();
  const timeline: TimelineSample[] = [];
  const ours = new Set<number>();
  let phase = 'start';
  let server: WatchedServer = { pid: null, metricsUrl: null, own: false };
  let lastCpu = cpuReading(ours);
  let sampledPeak: number | null = null;
  let busy = false;
  const currentRss = async (): Promise<number | null> => {
    if (server.pid !== null) return rssMb(server.pid);
    if (!server.metricsUrl) return null;
    return metricsRssMb(server.metricsUrl);
  };
  const tick = async () => {
    if (busy) return;
    busy = true;
    try {
      const rss = await currentRss();
      const now = cpuReading(server.pid !== null ? [...ours, server.pid] : ours);
      const other = lastCpu && now ? otherCores(lastCpu, now) : null;
      lastCpu = now;
      if (rss !== null) sampledPeak = Math.max(sampledPeak ?? 0, rss);
      timeline.push({ t: Math.round((performance.now() - started) / 100) / 10, phase, rssMb: rss, otherCores: other === null ? null : Math.round(other * 100) / 100 });
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void tick(), intervalMs);
  return {
    timeline,
    setPhase: (p) => {
      phase = p;
    },
    watch: (s) => {
      server = s;
      sampledPeak = null;
      lastCpu = cpuReading(s.pid !== null ? [...ours, s.pid] : ours);
    },
    addOurs: (pid) => void ours.add(pid),
    resetPeak: () => {
      sampledPeak = null;
      if (server.pid !== null && server.own) resetPeakRss(server.pid);
    },
    async peakMb() {
      if (server.pid !== null && server.own) return peakRssMb(server.pid);
      const now = await currentRss();
      return now === null ? sampledPeak : Math.max(sampledPeak ?? 0, now);
    },
    async stop() {
      clearInterval(timer);
      await tick();
      return timeline;
    },
  };
}

/** `process_resident_memory_bytes` of a hogbase /metrics, in MB. */
async function metricsRssMb(url: string): Promise<number | null> {
  const text = await fetch(url, { signal: AbortSignal.timeout(2000) }).then((r) => (r.ok ? r.text() : ''), () => '');
  const m = /^process_resident_memory_bytes\s+([\d.e+]+)/m.exec(text);
  return m ? Math.round(Number(m[1]) / 2 ** 20) : null;
}

/**
 * The process listening on a loopback TCP port of this machine (a `--target` on loopback), from
 * /proc/net/tcp{,6} and the sockets in /proc/<pid>/fd; null when it cannot be told.
 */
export function findListeningPid(port: number): number | null {
  const inodes = new Set<string>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // local_address is HEXIP:HEXPORT, st 0A is LISTEN, the inode is the tenth field.
      if (f.length > 9 && f[3] === '0A' && parseInt(f[1].split(':')[1], 16) === port) inodes.add(f[9]);
    }
  }
  if (!inodes.size) return null;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const link = readlinkSync(`/proc/${entry}/fd/${fd}`);
        if (link.startsWith('socket:[') && inodes.has(link.slice(8, -1))) return Number(entry);
      } catch {
        // the fd closed meanwhile
      }
    }
  }
  return null;
}

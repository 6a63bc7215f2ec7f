/** A SQL string literal, quotes doubled: for file paths the server made itself (DuckDB takes no parameter for a file name). */
export const sqlString = (s: string): string => `'${s.replaceAll("'", "''")}'`;

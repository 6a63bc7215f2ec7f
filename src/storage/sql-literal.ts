/** SQL string literal (file paths we build ourselves from numeric ids; quotes doubled anyway). */
export const sqlString = (s: string): string => `'${s.replaceAll("'", "''")}'`;

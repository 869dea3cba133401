import { useState } from "react";
import { get, logout, setBasicAuth, setBearer, ApiError } from "../api";

// Shown when the worker answers 401: basic (user + password) or a bearer token, kept for this
// tab only (sessionStorage).
export function Login({ onDone }: { onDone: () => void }) {
  const [user, setUser] = useState("");
  const [password, setPassword] = useState("");
  const [token, setToken] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    if (token) setBearer(token);
    else setBasicAuth(user, password);
    try {
      await get("/whoami");
      onDone();
    } catch (err) {
      logout();
      setError(err instanceof ApiError && err.status === 401 ? "Wrong user, password or token." : (err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="center">
      <form className="card login" onSubmit={submit} aria-labelledby="login-title">
        <h1 id="login-title">ferry console</h1>
        <p className="muted">This worker asks who you are.</p>
        <label>
          User
          <input autoComplete="username" value={user} onChange={(e) => setUser(e.target.value)} />
        </label>
        <label>
          Password
          <input type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} />
        </label>
        <label>
          or a bearer token
          <input type="password" autoComplete="off" value={token} onChange={(e) => setToken(e.target.value)} />
        </label>
        {error && <p role="alert" className="error">{error}</p>}
        <button type="submit" disabled={busy || (!token && !user)}>Log in</button>
      </form>
    </main>
  );
}
